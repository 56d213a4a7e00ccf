"""Engines and migrations: which database, how to connect, and bringing its schema up to date."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

# pg_advisory_xact_lock key that serialises migrations across processes ("prbot" in ASCII).
MIGRATION_LOCK_KEY = 0x707262_6F74

WAL_SWITCH_ATTEMPTS = 20

# Execution option that lets a SQLite transaction start deferred (read-only work).
READ_ONLY = "prbot_read_only"


class DatabaseUrlError(ValueError):
    """A database URL prbot cannot use."""


def default_database_url(*, create_dir: bool = True) -> str:
    """``PRBOT_DATABASE_URL``, else a SQLite file in ``PRBOT_DATA_DIR`` (default ``./.prbot``),
    whose directory is made unless ``create_dir`` is False (commands that only read)."""
    url = os.environ.get("PRBOT_DATABASE_URL", "").strip()
    if url:
        return url
    data_dir = Path(os.environ.get("PRBOT_DATA_DIR", "").strip() or ".prbot")
    if create_dir:
        data_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{data_dir.resolve() / 'prbot.sqlite'}"


def make_engine(url: str, **engine_options: object) -> sa.Engine:
    """An engine for a ``postgresql://`` or ``sqlite:///path`` URL, tuned for prbot's use."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseUrlError(f"not a database URL: {url!r}") from None
    # The webhook records deliveries from a thread pool; let it hold more than 5 connections.
    engine_options.setdefault("pool_size", 10)
    engine_options.setdefault("max_overflow", 20)
    connect_args: dict[str, Any] = dict(engine_options.pop("connect_args", None) or {})
    backend, _, driver = parsed.drivername.partition("+")
    if backend in ("postgresql", "postgres"):
        # psycopg 3 is the driver we ship; SQLAlchemy would pick psycopg2 for a bare URL.
        if not driver or backend == "postgres":
            parsed = parsed.set(drivername=f"postgresql+{driver or 'psycopg'}")
        if "connect_timeout" not in parsed.query:
            # Fail /readyz and the webhook in seconds, not after the OS gives up on TCP.
            connect_args.setdefault("connect_timeout", 10)
        return sa.create_engine(
            parsed, pool_pre_ping=True, connect_args=connect_args, **engine_options
        )
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise DatabaseUrlError("SQLite needs a file: sqlite:///path/to/prbot.sqlite")
        directory = Path(parsed.database).expanduser().parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseUrlError(f"cannot create {directory} for the database: {exc}") from None
        engine = sa.create_engine(
            parsed,
            # Connections move between threads through the pool, never used by two at once.
            connect_args={"check_same_thread": False, "timeout": 10, **connect_args},
            **engine_options,
        )
        _tune_sqlite(engine)
        return engine
    raise DatabaseUrlError(
        f"unsupported database {parsed.drivername!r}: use postgresql://… or sqlite:///path"
    )


def _tune_sqlite(engine: sa.Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection, _record) -> None:
        # Take BEGIN away from the sqlite3 module (which skips it before SELECTs) and emit
        # our own in on_begin below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=10000")
        _enable_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: sa.Connection) -> None:
        # Writers take the write lock up front: a deferred transaction that reads and then
        # writes fails at once with SQLITE_BUSY when another writer got in between, while
        # BEGIN IMMEDIATE waits its turn under busy_timeout.
        if connection.get_execution_options().get(READ_ONLY):
            connection.exec_driver_sql("BEGIN")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")


def _enable_wal(cursor) -> None:
    """Switch the file to WAL (persistent, so usually already done).

    The switch needs an exclusive lock and SQLite answers "database is locked" at once,
    without waiting on busy_timeout, when several processes open a new file together.
    """
    for attempt in range(WAL_SWITCH_ATTEMPTS):
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_SWITCH_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * (attempt + 1))


@contextmanager
def reading(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A connection for reads only (on SQLite it does not take the write lock)."""
    with engine.connect() as connection:
        connection.execution_options(**{READ_ONLY: True})
        yield connection


def alembic_config(connection: sa.Connection | None = None):
    """Alembic configured in code (an ``alembic.config.Config``): no alembic.ini needed."""
    # Imported here: workers and the webhook import this module but never migrate.
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def migrate(engine: sa.Engine) -> None:
    """Upgrade the schema to the newest revision; a no-op when it is already there.

    Several processes may call this at once: on Postgres they queue on an advisory lock (the
    whole upgrade is one transaction), on SQLite on the write lock of BEGIN IMMEDIATE.
    """
    from alembic import command

    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK_KEY)))
        command.upgrade(alembic_config(connection), "head")


def current_revision(engine: sa.Engine) -> str | None:
    """The schema revision the database is at (None before the first migration)."""
    from alembic.runtime.migration import MigrationContext

    with reading(engine) as connection:
        return MigrationContext.configure(connection).get_current_revision()


def ping(engine: sa.Engine) -> bool:
    """Whether the database answers a trivial query (for /readyz)."""
    try:
        with reading(engine) as connection:
            connection.execute(sa.text("SELECT 1"))
        return True
    except Exception as exc:  # any driver error means "not ready"
        log.warning("database ping failed: %s", exc)
        return False
