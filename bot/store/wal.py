"""SQLite WAL checkpoints on a thread of their own, off the intake's commit path.

In WAL mode SQLite copies the log back into the database file ("checkpoints") from
whichever connection's commit pushes the log past 1,000 pages, inside that commit's call,
fsyncs included. With 20 KB deliveries that is the intake writer about every 200
deliveries, and every request queued behind that commit waited for a disk flush: the tail
of the intake's latency (docs/benchmarks/intake.md). So the intake's inbox file
(bot/store/inbox.py) has automatic checkpoints off, and this thread checkpoints it instead,
PASSIVE (it never waits for a reader or a writer, and writers go on appending meanwhile).
"""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa

log = logging.getLogger(__name__)

# How often the log is copied back while there are writes; the log grows by at most this
# much intake traffic between checkpoints (500 deliveries a second: about 5 MB).
CHECKPOINT_SECONDS = 0.5
# SQLite's own default (pages), for every file but the inbox.
DEFAULT_AUTOCHECKPOINT_PAGES = 1000


class WalCheckpointer:
    """Checkpoints ``engine``'s SQLite file every ``interval`` seconds when written to."""

    def __init__(self, engine: sa.Engine, interval: float = CHECKPOINT_SECONDS) -> None:
        self._engine = engine
        self._interval = interval
        self._written = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.checkpoints = 0

    def wrote(self) -> None:
        """A commit happened; the next round checkpoints."""
        self._written.set()

    def checkpoint_once(self) -> tuple[int, int, int]:
        """One PASSIVE checkpoint: (busy, frames in the log, frames checkpointed)."""
        with self._engine.connect() as connection:
            raw = connection.connection.dbapi_connection
            busy, frames, copied = raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.checkpoints += 1
        return busy, frames, copied

    def start(self) -> WalCheckpointer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="prbot-wal-checkpoint", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop, after a last checkpoint of what was written."""
        self._stopping.set()
        self._written.set()  # wake the thread
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _run(self) -> None:
        while True:
            self._written.wait()
            stopping = self._stopping.wait(0 if self._stopping.is_set() else self._interval)
            self._written.clear()
            try:
                self.checkpoint_once()
            except Exception:  # noqa: BLE001 - a missed checkpoint is retried next round
                log.exception("WAL checkpoint failed")
            if stopping:
                return
