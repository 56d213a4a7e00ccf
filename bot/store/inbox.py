"""SQLite only: the intake's own file for deliveries on their way into the main database.

SQLite has one write lock per file. Workers commit several times per job, and prbot serve
runs them below the intake's priority, so a worker preempted while it holds the lock kept
the intake's commit (and every request queued behind it) waiting: with a busy worker the
intake's writer spent most of its time retrying the lock (docs/benchmarks/intake.md). So on
SQLite the intake commits into a file nobody else writes (``<database>-inbox``), answers,
and :class:`InboxMover` carries the rows into the main database in batches, off the request
path, usually within milliseconds.

A delivery is acknowledged once it is in the inbox. The move is idempotent by GUID
(``insert_deliveries`` skips known ones), and rows leave the inbox only after the main
database committed them, so a crash at any point loses nothing and queues nothing twice;
the next start moves what was left. The mover only reads the inbox: the intake's writer
thread deletes what was moved, in its own next transaction, so the inbox has one writer and
its lock is never waited for. PostgreSQL locks rows, not the database, so there the
intake writes the main database directly and there is no inbox.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event

from bot.store.db import make_engine, reading
from bot.store.deliveries import IncomingDelivery, insert_deliveries
from bot.store.schema import UTCDateTime, utcnow

log = logging.getLogger(__name__)

# Rows carried per main-database transaction: one write lock for the lot.
MOVE_BATCH = 200
# ...and at most this much of their bodies (a move holds them all in memory at once): bodies
# go up to 25 MB, and 200 of them piled up behind a locked main database would be 5 GB. A
# single bigger body still moves, alone.
MOVE_BYTES = 16 * 1024 * 1024
# Woken by a commit, the mover first lets this much more arrive: under a burst it then moves
# ten or twenty deliveries per main-database transaction instead of one or two, a third of
# the intake's CPU at 500 deliveries a second. Nothing waits on the move but the job's start.
GATHER_SECONDS = 0.02
# The mover looks again this often even unwoken (rows left by a crash, a failed move).
IDLE_SECONDS = 1.0
RETRY_SECONDS = 1.0
# On shutdown, the mover gets this long to empty the inbox; what is left moves next start.
DRAIN_SECONDS = 10.0

_metadata = sa.MetaData()
inbox = sa.Table(
    "inbox",
    _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("guid", sa.String(100), nullable=False, unique=True),
    sa.Column("event", sa.String(100), nullable=False),
    sa.Column("action", sa.String(100), nullable=True),
    sa.Column("repo", sa.String(300), nullable=True),
    sa.Column("installation_id", sa.BigInteger, nullable=True),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("received_at", UTCDateTime, nullable=False),
    # Ids never come back after a delete (SQLite would otherwise reuse the highest free
    # one): the mover's "copied up to id N" must never cover a row it has not seen.
    sqlite_autoincrement=True,
)


# Built once: at hundreds of deliveries a second, building a statement (and its cache key)
# each time costs about as much as running it.
_KNOWN_HERE = sa.select(inbox.c.guid).where(inbox.c.guid.in_(sa.bindparam("guids", expanding=True)))
_ADD = sa.insert(inbox)
_NEXT_SIZES = (
    sa.select(inbox.c.id, sa.func.length(inbox.c.body).label("size"))
    .where(inbox.c.id > sa.bindparam("after_id"))
    .order_by(inbox.c.id)
    .limit(sa.bindparam("limit"))
)
_ROWS_UP_TO = (
    sa.select(inbox)
    .where(inbox.c.id > sa.bindparam("after_id"), inbox.c.id <= sa.bindparam("up_to"))
    .order_by(inbox.c.id)
)
_FORGET = sa.delete(inbox).where(inbox.c.id <= sa.bindparam("up_to"))


def inbox_path(main: sa.Engine) -> Path:
    """``prbot.sqlite`` -> ``prbot.sqlite-inbox``, beside SQLite's own -wal and -shm files."""
    database = Path(main.url.database or "")
    return database.with_name(database.name + "-inbox")


def waiting_in_inbox(main: sa.Engine) -> int:
    """Deliveries acknowledged but not yet in ``main`` (0 without an inbox)."""
    if main.dialect.name != "sqlite" or not inbox_path(main).exists():
        return 0
    engine = make_engine(f"sqlite:///{inbox_path(main)}")
    try:
        with reading(engine) as connection:
            if not sa.inspect(connection).has_table("inbox"):
                return 0
            return connection.execute(sa.select(sa.func.count()).select_from(inbox)).scalar_one()
    finally:
        engine.dispose()


class InboxUnavailable(RuntimeError):
    """The inbox file cannot be opened or created (a directory there, no permission...)."""


class Inbox:
    """The inbox file of a SQLite main database."""

    def __init__(self, main: sa.Engine) -> None:
        if main.dialect.name != "sqlite":
            raise ValueError("only a SQLite database has an inbox")
        self.main = main
        self._main_reader: sa.Connection | None = None  # the writer thread's own
        self.engine = make_engine(f"sqlite:///{inbox_path(main)}")
        event.listen(self.engine, "connect", _no_automatic_checkpoints)
        try:
            _create_or_upgrade(self.engine)
        except sa.exc.SQLAlchemyError as exc:
            self.engine.dispose()
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            path = inbox_path(main)
            raise InboxUnavailable(f"cannot open the intake's inbox {path}: {reason}") from exc

    def add(self, connection: sa.Connection, incoming: list[IncomingDelivery]) -> list[bool]:
        """In the caller's transaction on :attr:`engine`: store the deliveries not yet known
        (here or in the main database); per delivery, whether it was new."""
        guids = {"guids": [item.guid for item in incoming]}
        known = set(connection.execute(_KNOWN_HERE, guids).scalars())
        known.update(self._known_in_main(guids["guids"]))
        now = utcnow()
        rows, results = [], []
        for item in incoming:
            new = item.guid not in known
            results.append(new)
            if new:
                known.add(item.guid)
                rows.append(
                    {
                        "guid": item.guid,
                        "event": item.event,
                        "action": item.action,
                        "repo": item.repo,
                        "installation_id": item.installation_id,
                        "body": bytes(item.body),
                        "reason": item.reason,
                        "received_at": now,
                    }
                )
        if rows:
            connection.execute(_ADD, rows)
        return results

    def _known_in_main(self, guids: list[str]) -> set[str]:
        """The GUIDs the main database has. A read: in WAL mode it never waits for a writer.

        On a connection kept for it, straight on the driver in autocommit (each SELECT its
        own read transaction, ended at once so checkpoints are never held back): a pooled
        connection with SQLAlchemy's transaction around one indexed lookup cost the intake's
        writer 1-3 ms a batch, as much as the rest of its transaction.
        """
        if self._main_reader is None:
            self._main_reader = self.main.connect()
        raw = self._main_reader.connection.dbapi_connection
        marks = ",".join("?" * len(guids))
        rows = raw.execute(f"SELECT guid FROM deliveries WHERE guid IN ({marks})", guids)
        return {row[0] for row in rows}

    def move(
        self, after_id: int = 0, limit: int = MOVE_BATCH, max_bytes: int = MOVE_BYTES
    ) -> tuple[int, int]:
        """Copy up to ``limit`` of the oldest rows past ``after_id`` into the main database,
        in one transaction there: (rows copied, the last id copied, else ``after_id``).
        Bodies of at most ``max_bytes`` together, but always the first row."""
        with reading(self.engine) as connection:
            window = {"after_id": after_id, "limit": limit}
            up_to, total = after_id, 0
            for row_id, size in connection.execute(_NEXT_SIZES, window):
                total += size or 0
                if total > max_bytes and up_to > after_id:
                    break
                up_to = row_id
            if up_to == after_id:
                return 0, after_id
            # The same read transaction: the rows are the ones just sized.
            rows = connection.execute(_ROWS_UP_TO, {"after_id": after_id, "up_to": up_to}).all()
        with self.main.begin() as main:
            insert_deliveries(main, [_incoming(row) for row in rows])
        return len(rows), rows[-1].id

    @staticmethod
    def forget(connection: sa.Connection, up_to: int) -> None:
        """In the caller's transaction on :attr:`engine`: drop the rows moved, ``id <= up_to``."""
        connection.execute(_FORGET, {"up_to": up_to})

    def forget_now(self, up_to: int) -> None:
        """:meth:`forget` in a transaction of its own (once the writer thread has stopped)."""
        with self.engine.begin() as connection:
            self.forget(connection, up_to)

    def pending(self) -> int:
        with reading(self.engine) as connection:
            return connection.execute(sa.select(sa.func.count()).select_from(inbox)).scalar_one()

    def dispose(self) -> None:
        if self._main_reader is not None:
            self._main_reader.close()
            self._main_reader = None
        self.engine.dispose()


def _create_or_upgrade(engine: sa.Engine) -> None:
    """Create the inbox table, or give one the first inbox code made AUTOINCREMENT ids.

    Without AUTOINCREMENT an emptied table gives its ids again, and the writer's "delete up
    to the id the mover copied" then deletes new rows the mover never saw: acknowledged
    deliveries lost. One BEGIN IMMEDIATE transaction, so two intakes starting on one file
    take turns instead of both creating the table.
    """
    with engine.begin() as connection:
        sql = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'inbox'"
        ).scalar_one_or_none()
        if sql is not None and "AUTOINCREMENT" not in sql.upper():
            connection.exec_driver_sql("ALTER TABLE inbox RENAME TO inbox_before_autoincrement")
            _metadata.create_all(connection)
            columns = ", ".join(column.name for column in inbox.columns)
            # Explicit ids: the rows keep them, and sqlite_sequence starts past the highest.
            connection.exec_driver_sql(
                f"INSERT INTO inbox ({columns}) SELECT {columns} FROM inbox_before_autoincrement"
            )
            connection.exec_driver_sql("DROP TABLE inbox_before_autoincrement")
        else:
            _metadata.create_all(connection)


def _no_automatic_checkpoints(dbapi_connection, _record) -> None:
    # A commit that pushes the log past 1,000 pages would copy it back, fsyncs included,
    # inside the intake's request path; WalCheckpointer does it on a thread of its own.
    dbapi_connection.execute("PRAGMA wal_autocheckpoint=0")


def _incoming(row: sa.Row) -> IncomingDelivery:
    received: datetime = row.received_at
    return IncomingDelivery(
        guid=row.guid,
        event=row.event,
        action=row.action,
        body=bytes(row.body),
        repo=row.repo,
        installation_id=row.installation_id,
        reason=row.reason,
        received_at=received,
    )


class InboxMover:
    """A thread that copies :class:`Inbox` into the main database whenever woken, and hands
    the last id copied to ``moved`` (the writer thread then deletes up to it)."""

    def __init__(self, box: Inbox, moved: Callable[[int], None]) -> None:
        self.inbox = box
        self._moved = moved
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.moved = 0
        # Rows up to here are in the main database; from 0 after a start, so what a crash
        # left is copied again (and skipped there by GUID).
        self.moved_up_to = 0

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> InboxMover:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="prbot-inbox-mover", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after moving what is in the inbox (for at most ``DRAIN_SECONDS``)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=DRAIN_SECONDS + 5)
            self._thread = None

    def _run(self) -> None:
        drain_until: float | None = None
        while True:
            if self._wake.wait(IDLE_SECONDS) and not self._stopping.is_set():
                self._stopping.wait(GATHER_SECONDS)
            self._wake.clear()
            stopping = self._stopping.is_set()
            if stopping and drain_until is None:
                drain_until = time.monotonic() + DRAIN_SECONDS
            try:
                while True:
                    moved, self.moved_up_to = self.inbox.move(self.moved_up_to)
                    self.moved += moved
                    if moved:
                        self._moved(self.moved_up_to)
                    if not moved or (drain_until is not None and time.monotonic() > drain_until):
                        break
            except Exception:  # noqa: BLE001 - rows stay in the inbox and move on a later try
                log.exception("could not move deliveries from the intake's inbox")
                if not stopping:
                    self._stopping.wait(RETRY_SECONDS)
            if stopping:
                return
