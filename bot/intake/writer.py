"""The intake's one database writer: deliveries parsed, validated and stored in batches.

Requests hand their verified bodies to one thread and await the answer. The thread takes
whatever has queued up (up to ``MAX_BATCH``), parses and validates each, and stores them all
in one transaction (bot.store.deliveries.record_deliveries), and nothing on the event loop
ever waits on the database. On SQLite the transaction is on the intake's own inbox file,
which threads of this process move into the main database and checkpoint, so neither a
worker holding the main database's write lock nor a WAL checkpoint's fsync is ever in a
request's path (bot/store/inbox.py, bot/store/wal.py).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from bot.events.webhooks import DeliveryRejected, classify, validate
from bot.store import deliveries
from bot.store.inbox import Inbox, InboxMover
from bot.store.wal import WalCheckpointer

log = logging.getLogger(__name__)

MAX_BATCH = 64
# A transaction (with its statements' Python around it) costs about a millisecond of CPU
# whether it stores one delivery or ten; at 500 deliveries a second, 2 ms of waiting makes
# most transactions store two or more, for a millisecond or two of latency.
GATHER_SECONDS = 0.002
SQLITE_LOCK_WAIT_SECONDS = 10.0
SQLITE_RETRY_SECONDS = 0.001
SQLITE_BUSY_TIMEOUT_MS = 10000  # what bot.store.db sets on every connection


@dataclass(frozen=True)
class Stored:
    """The answer for one delivery: HTTP status, metrics outcome, message (may be empty)."""

    status: int
    outcome: str
    message: str = ""


@dataclass
class _Pending:
    headers: dict[str, str]
    body: bytes
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop


@dataclass(frozen=True)
class _Forget:
    """From the mover: inbox rows up to this id are in the main database."""

    up_to: int


Answer = tuple[_Pending, Stored | BaseException]


def _settle(answers: list[Answer]) -> None:
    """On the event loop: answer each request; one cancelled meanwhile (client gone) is skipped."""
    for pending, outcome in answers:
        if pending.future.done():
            continue
        if isinstance(outcome, BaseException):
            pending.future.set_exception(outcome)
        else:
            pending.future.set_result(outcome)


def _answer(answers: list[Answer]) -> None:
    """Hand a batch's answers to their event loops, one wake-up per loop and batch (each
    wake-up is a write to the loop's self-pipe; one per request was a tenth of the
    intake's time under a burst)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Answer]] = {}
    for answer in answers:
        by_loop.setdefault(answer[0].loop, []).append(answer)
    for loop, some in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, some)
        except RuntimeError:
            pass  # that loop has closed: nobody waits for these answers any more


class DeliveryWriter:
    """A thread that stores deliveries in batches; :meth:`store` awaits one's answer."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._queue: queue.SimpleQueue[_Pending | _Forget | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="prbot-intake-writer", daemon=True)
        self._started = False
        self._lock = threading.Lock()
        self._inbox: Inbox | None = None
        self._mover: InboxMover | None = None
        self._checkpointer: WalCheckpointer | None = None
        if engine.dialect.name == "sqlite":
            self._inbox = Inbox(engine)
            # What the mover copied is deleted by this writer, the inbox's only writer.
            self._mover = InboxMover(self._inbox, lambda up_to: self._queue.put(_Forget(up_to)))
            self._checkpointer = WalCheckpointer(self._inbox.engine)

    def start(self) -> DeliveryWriter:
        with self._lock:
            if not self._started:
                if self._mover is not None and self._checkpointer is not None:
                    self._mover.start()  # first, what a crash left in the inbox
                    self._checkpointer.start()
                self._thread.start()
                self._started = True
        return self

    def stop(self) -> None:
        if self._started:
            self._queue.put(None)
            self._thread.join(timeout=30)
        if self._mover is not None and self._checkpointer is not None and self._inbox is not None:
            self._mover.stop()
            if self._mover.moved_up_to:  # the writer has stopped: nobody else writes now
                try:
                    self._inbox.forget_now(self._mover.moved_up_to)
                except Exception:  # noqa: BLE001 - the next start copies them again, harmlessly
                    log.exception("could not clear the intake's inbox")
            self._checkpointer.stop()
            self._inbox.dispose()

    async def store(self, headers: dict[str, str], body: bytes) -> Stored:
        """Parse, validate and store one verified delivery. Raises WebhookError (415) and
        database errors from the batch it was in."""
        self.start()
        if not self._thread.is_alive():
            raise RuntimeError("the intake's delivery writer has stopped")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put(_Pending(headers, body, future, loop))
        return await future

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            # Group commit: a request that finds the writer idle waits GATHER_SECONDS for
            # company, so that under a steady stream a transaction serves several.
            gather_until = time.monotonic() + GATHER_SECONDS
            while len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get(timeout=max(gather_until - time.monotonic(), 0))
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(item)
            pendings = [item for item in batch if isinstance(item, _Pending)]
            forget = max((item.up_to for item in batch if isinstance(item, _Forget)), default=0)
            try:
                answers = self._write(pendings, forget)
            except Exception as exc:  # noqa: BLE001 - the writer must outlive any batch
                log.exception("intake writer failed a batch")
                answers = [(pending, exc) for pending in pendings]
            _answer(answers)

    def _write(self, batch: list[_Pending], forget: int = 0) -> list[Answer]:
        answers: list[Answer] = []
        incoming: list[deliveries.IncomingDelivery] = []
        waiting: list[tuple[_Pending, deliveries.IncomingDelivery]] = []
        for pending in batch:
            try:
                item = self._prepare(pending)
            except Exception as exc:  # noqa: BLE001 - e.g. WebhookError 415, for that request
                answers.append((pending, exc))
                continue
            if isinstance(item, Stored):
                answers.append((pending, item))
                continue
            incoming.append(item)
            waiting.append((pending, item))
        if not incoming and not forget:
            return answers
        try:
            results = self._commit(incoming, forget)
        except Exception as exc:  # noqa: BLE001 - every request of the batch gets the error
            return answers + [(pending, exc) for pending, _ in waiting]
        for (pending, item), new in zip(waiting, results, strict=True):
            if item.reason is not None:
                answers.append((pending, Stored(400, "rejected", item.reason)))
            elif new:
                answers.append((pending, Stored(202, "accepted")))
            else:
                answers.append((pending, Stored(200, "duplicate")))
        return answers

    def _commit(self, incoming: list[deliveries.IncomingDelivery], forget: int = 0) -> list[bool]:
        if self._inbox is None or self._mover is None or self._checkpointer is None:
            return deliveries.record_deliveries(self._engine, incoming)
        # This thread is the inbox's only writer, so its lock is free unless another intake
        # process shares the file. SQLite's own busy handler would then sleep up to 100 ms
        # between tries; here the lock is asked for without waiting, again every millisecond.
        deadline = time.monotonic() + SQLITE_LOCK_WAIT_SECONDS
        with self._inbox.engine.connect() as connection:
            # On the driver connection: through SQLAlchemy the PRAGMA would begin (and take
            # the write lock for) a transaction of its own.
            raw = connection.connection.dbapi_connection
            raw.execute("PRAGMA busy_timeout=0")
            try:
                while True:
                    try:
                        with connection.begin():
                            stored = self._inbox.add(connection, incoming) if incoming else []
                            if forget:
                                self._inbox.forget(connection, forget)
                        if incoming:
                            self._mover.wake()
                        self._checkpointer.wrote()
                        return stored
                    except OperationalError as exc:
                        if "locked" not in str(exc) or time.monotonic() > deadline:
                            raise
                        time.sleep(SQLITE_RETRY_SECONDS)
            finally:
                raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")

    @staticmethod
    def _prepare(pending: _Pending) -> deliveries.IncomingDelivery | Stored:
        try:
            delivery = classify(pending.headers, pending.body)
            if not delivery.handled:
                return Stored(200, "ignored")
            validate(delivery)
        except DeliveryRejected as exc:
            log.warning("delivery %s (%s) rejected: %s", exc.guid, exc.event, exc.reason)
            return deliveries.IncomingDelivery(
                guid=exc.guid,
                event=exc.event,
                action=exc.action,
                body=pending.body,
                reason=exc.reason,
            )
        return deliveries.IncomingDelivery(
            guid=delivery.guid,
            event=delivery.event,
            action=delivery.action,
            body=pending.body,
            repo=delivery.repo,
            installation_id=delivery.installation_id,
        )
