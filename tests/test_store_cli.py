"""``prbot queue list|retry|stats`` through the real command-line entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.cli import main
from bot.store.db import make_engine, migrate
from bot.store.queue import Queue


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.sqlite'}"


def run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    code = main(["queue", *args, "--database-url", url])
    out, err = capsys.readouterr()
    return code, out, err


def seeded(url: str) -> tuple[sa.Engine, Queue, dict[str, int]]:
    """A queue with one job in each state: queued, leased, done, dead."""
    engine = make_engine(url)
    migrate(engine)
    queue = Queue(engine, max_attempts=1)
    ids = {
        name: queue.enqueue(kind, {"n": n})
        for n, (name, kind) in enumerate(
            [("done", "delivery"), ("dead", "pipeline"), ("leased", "pipeline")]
        )
    }
    queue.complete(queue.lease("w"))
    queue.fail(queue.lease("w"), "Traceback …\nRuntimeError: GitHub said 502")
    queue.lease("w")
    ids["queued"] = queue.enqueue("pipeline", {"n": 3}, dedupe_key="pipeline:org/repo#9")
    return engine, queue, ids


def test_a_missing_database_is_an_error_and_is_not_created(
    capsys, tmp_path: Path, sqlite_url: str
) -> None:
    for action in ("list", "stats", "rejected"):
        code, out, err = run(capsys, sqlite_url, action)
        assert (code, out) == (2, "")
        assert err.startswith(f"prbot: error: no prbot database at {tmp_path / 'cli.sqlite'} ")
        assert "--database-url" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "cli.sqlite").exists()


def test_a_database_without_prbot_schema_is_an_error_and_stays_empty(
    capsys, tmp_path: Path
) -> None:
    path = tmp_path / "other.sqlite"
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE notes (x INTEGER)")
    code, _, err = run(capsys, f"sqlite:///{path}", "list")
    assert code == 2 and "holds no prbot database" in err
    assert sa.inspect(engine).get_table_names() == ["notes"]
    engine.dispose()


def test_stats_on_an_empty_migrated_database(capsys, sqlite_url: str) -> None:
    migrated(sqlite_url)
    code, out, _ = run(capsys, sqlite_url, "stats")
    assert code == 0
    assert out.splitlines() == [
        "KIND   QUEUED  LEASED  DONE  DEAD",
        "total  0       0       0     0",
    ]


def migrated(url: str) -> None:
    engine = make_engine(url)
    migrate(engine)
    engine.dispose()


def test_stats_counts_per_kind(capsys, database_url: str) -> None:
    engine, _, _ = seeded(database_url)
    code, out, _ = run(capsys, database_url, "stats")
    assert code == 0
    assert [line.split() for line in out.splitlines()] == [
        ["KIND", "QUEUED", "LEASED", "DONE", "DEAD"],
        ["delivery", "0", "0", "1", "0"],
        ["pipeline", "1", "1", "0", "1"],
        ["total", "1", "1", "1", "1"],
    ]
    engine.dispose()


def test_list_all_and_by_state(capsys, database_url: str) -> None:
    engine, _, ids = seeded(database_url)
    code, out, _ = run(capsys, database_url, "list")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == [
        "ID", "STATE", "KIND", "ATTEMPTS", "CREATED", "RUN", "AFTER", "DEDUPE", "KEY", "ERROR"
    ]  # fmt: skip
    assert [line.split()[:2] for line in lines[1:]] == [
        [str(ids["queued"]), "queued"],
        [str(ids["leased"]), "leased"],
        [str(ids["dead"]), "dead"],
        [str(ids["done"]), "done"],
    ]
    assert lines[1].index("pipeline:org/repo#9") == lines[0].index("DEDUPE KEY")
    code, out, _ = run(capsys, database_url, "list", "--state", "dead", "--limit", "5")
    [header, dead] = out.splitlines()
    assert dead.split()[:4] == [str(ids["dead"]), "dead", "pipeline", "1"]
    assert dead.endswith("RuntimeError: GitHub said 502"), "the last line of the error"
    code, out, _ = run(capsys, database_url, "list", "--state", "done", "--limit", "1")
    assert len(out.splitlines()) == 2
    engine.dispose()


def test_list_empty(capsys, sqlite_url: str) -> None:
    migrated(sqlite_url)
    assert run(capsys, sqlite_url, "list", "--state", "dead")[1] == "no dead jobs\n"
    assert run(capsys, sqlite_url, "list")[1] == "no jobs\n"


def test_retry_one_and_all(capsys, database_url: str) -> None:
    engine, queue, ids = seeded(database_url)
    code, out, _ = run(capsys, database_url, "retry", str(ids["dead"]))
    assert (code, out) == (0, f"re-queued job {ids['dead']}\n")
    revived = queue.get(ids["dead"])
    assert (revived.state, revived.attempts) == ("queued", 0)
    code, out, _ = run(capsys, database_url, "retry", "--all")
    assert (code, out) == (0, "re-queued 0 dead jobs\n")
    assert queue.fail(queue.lease("w"), "again") == "dead"  # max_attempts=1
    assert run(capsys, database_url, "retry", "--all")[1] == "re-queued 1 dead job\n"
    engine.dispose()


def test_retry_errors_are_one_line(capsys, sqlite_url: str) -> None:
    engine, _, ids = seeded(sqlite_url)
    code, out, err = run(capsys, sqlite_url, "retry", str(ids["done"]))
    assert (code, out) == (2, "")
    assert err == f"prbot: error: job {ids['done']} is done, not dead; only dead jobs are retried\n"
    code, _, err = run(capsys, sqlite_url, "retry", "999")
    assert (code, err) == (2, "prbot: error: no job 999\n")
    engine.dispose()


def test_retry_needs_an_id_or_all(capsys, sqlite_url: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["queue", "retry", "--database-url", sqlite_url])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        main(["queue", "retry", "0", "--database-url", sqlite_url])


def test_bad_database_urls(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "mysql://root@localhost/x", "stats")
    assert (code, err) == (
        2,
        "prbot: error: unsupported database 'mysql': use postgresql://… or sqlite:///path\n",
    )
    code, _, err = run(capsys, "postgresql://prbot@127.0.0.1:1/prbot", "stats")
    assert code == 2
    assert err.startswith("prbot: error: cannot open the database:")
    assert len(err.splitlines()) == 1


def test_database_from_the_environment(
    capsys, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PRBOT_DATABASE_URL", raising=False)
    monkeypatch.setenv("PRBOT_DATA_DIR", str(tmp_path / "data"))
    assert main(["queue", "stats"]) == 2
    assert "no prbot database at" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()  # not even the directory
    (tmp_path / "data").mkdir()
    migrated(f"sqlite:///{tmp_path / 'data' / 'prbot.sqlite'}")
    assert main(["queue", "stats"]) == 0
    capsys.readouterr()
