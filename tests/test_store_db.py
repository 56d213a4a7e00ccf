"""Engines: which database a URL means, SQLite tuning, ping."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.store.db import DatabaseUrlError, default_database_url, make_engine, ping, reading
from bot.store.deliveries import count_deliveries, record_delivery


def test_default_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRBOT_DATABASE_URL", "postgresql://bot@db.internal/prbot")
    assert default_database_url() == "postgresql://bot@db.internal/prbot"


def test_default_url_is_a_sqlite_file_in_the_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PRBOT_DATABASE_URL", raising=False)
    monkeypatch.setenv("PRBOT_DATA_DIR", str(tmp_path / "data"))
    assert default_database_url() == f"sqlite:///{tmp_path / 'data' / 'prbot.sqlite'}"
    assert (tmp_path / "data").is_dir()


def test_default_data_dir_is_dot_prbot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PRBOT_DATABASE_URL", raising=False)
    monkeypatch.delenv("PRBOT_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_database_url() == f"sqlite:///{tmp_path.resolve() / '.prbot' / 'prbot.sqlite'}"


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("postgresql://bot:pw@db.internal:5432/prbot", "postgresql+psycopg"),
        ("postgres://bot@db.internal/prbot", "postgresql+psycopg"),
        ("postgresql+psycopg://bot@db.internal/prbot", "postgresql+psycopg"),
    ],
)
def test_postgres_urls_use_psycopg_3(url: str, driver: str) -> None:
    engine = make_engine(url)  # engines connect lazily: nothing is contacted here
    assert engine.url.drivername == driver
    assert engine.url.host == "db.internal"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("not a url", "not a database URL"),
        ("mysql://root@localhost/prbot", "unsupported database 'mysql'"),
        ("sqlite://", "SQLite needs a file"),
        ("sqlite:///:memory:", "SQLite needs a file"),
    ],
)
def test_unusable_urls_are_clear_errors(url: str, message: str) -> None:
    with pytest.raises(DatabaseUrlError, match=message):
        make_engine(url)


def test_sqlite_is_tuned_for_concurrent_use(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'nested' / 'dir' / 'prbot.sqlite'}")
    with engine.connect() as connection:
        pragma = {
            name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
        }
    assert pragma == {
        "journal_mode": "wal",
        "synchronous": 1,
        "busy_timeout": 10000,
        "foreign_keys": 1,
    }
    engine.dispose()


def test_ping(engine: sa.Engine) -> None:
    assert ping(engine) is True


def test_ping_unreachable_database_is_false(tmp_path: Path) -> None:
    # Port 1 on the loopback refuses at once; no network beyond this machine.
    assert ping(make_engine("postgresql://prbot@127.0.0.1:1/prbot")) is False
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a SQLite database file, just text" * 100)
    assert ping(make_engine(f"sqlite:///{garbage}")) is False


def test_sqlite_directory_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(DatabaseUrlError, match="cannot create"):
        make_engine(f"sqlite:///{blocker / 'prbot.sqlite'}")


def test_a_reader_does_not_block_writers(engine: sa.Engine) -> None:
    with reading(engine) as connection:
        connection.execute(sa.text("SELECT 1"))
        assert connection.in_transaction()
        # With the write lock taken by the reader this would wait out busy_timeout and fail.
        assert record_delivery(
            engine, guid="g", event="ping", action=None, repo=None, installation_id=None, body=b""
        )
    assert count_deliveries(engine) == 1


def connect_params(url: str) -> dict:
    """The keyword arguments the engine hands to psycopg.connect (the attempt is refused)."""
    engine = make_engine(url)
    seen: dict = {}

    @sa.event.listens_for(engine, "do_connect")
    def capture(dialect, record, cargs, cparams) -> None:
        seen.update(cparams)

    assert ping(engine) is False  # nothing listens on port 1
    return seen


def test_postgres_connections_time_out() -> None:
    assert connect_params("postgresql://prbot@127.0.0.1:1/prbot")["connect_timeout"] == 10
    custom = connect_params("postgresql://prbot@127.0.0.1:1/prbot?connect_timeout=3")
    assert custom["connect_timeout"] == "3", "the URL's own value wins"
