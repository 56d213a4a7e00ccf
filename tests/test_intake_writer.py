"""The intake's batched writer: one transaction per batch, each request its own answer."""

from __future__ import annotations

import asyncio
import json

from bot.intake.writer import DeliveryWriter
from bot.store import deliveries
from bot.store.queue import Queue


def _headers(event: str, guid: str) -> dict[str, str]:
    return {"x-github-event": event, "x-github-delivery": guid, "content-type": "application/json"}


def test_a_batch_mixes_accepted_rejected_duplicate_and_ignored(engine):
    good = json.dumps({"action": "created", "installation": {"id": 9}}).encode()
    bad = json.dumps({"action": "created", "installation": {"id": True}}).encode()
    ignored = json.dumps({"action": "edited"}).encode()
    writer = DeliveryWriter(engine).start()

    async def burst():
        return await asyncio.gather(
            writer.store(_headers("installation", "a"), good),
            writer.store(_headers("installation", "a"), good),  # same GUID in one batch
            writer.store(_headers("installation", "b"), bad),
            writer.store(_headers("issue_comment", "c"), ignored),
            *(writer.store(_headers("installation", f"n{i}"), good) for i in range(100)),
        )

    try:
        answers = asyncio.run(burst())
    finally:
        writer.stop()
    assert [(a.status, a.outcome) for a in answers[:4]] == [
        (202, "accepted"),
        (200, "duplicate"),
        (400, "rejected"),
        (200, "ignored"),
    ]
    assert answers[2].message.startswith("installation.id:")
    assert {(a.status, a.outcome) for a in answers[4:]} == {(202, "accepted")}
    assert deliveries.count_deliveries(engine) == 102  # a, b and the 100
    assert Queue(engine).depth()["queued"] == 101  # no job for the rejected one


def test_on_sqlite_a_worker_holding_the_write_lock_never_delays_an_answer(tmp_path):
    import sqlite3
    import time

    from bot.store.db import make_engine, migrate

    path = tmp_path / "prbot.sqlite"
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    # Like a worker process holding the main database's write lock.
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    writer = DeliveryWriter(engine).start()
    body = json.dumps({"action": "created", "installation": {"id": 9}}).encode()
    try:
        answer = asyncio.run(writer.store(_headers("installation", "early"), body))
        # Answered from the inbox while the lock is still held; nothing is in main yet.
        assert (answer.status, answer.outcome) == (202, "accepted")
        assert deliveries.count_deliveries(engine) == 0
        other.execute("COMMIT")
        deadline = time.monotonic() + 10
        while deliveries.count_deliveries(engine) == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Queue(engine).depth()["queued"] == 1  # moved, with its job, once
        # The writer thread, the inbox's one writer, then deletes what was moved.
        from bot.store.inbox import waiting_in_inbox

        while waiting_in_inbox(engine) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waiting_in_inbox(engine) == 0
    finally:
        writer.stop()
        other.close()
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10000
    engine.dispose()


def test_a_request_cancelled_while_its_batch_waits_is_skipped_and_the_writer_goes_on(tmp_path):
    import sqlite3
    import threading

    from bot.store.db import make_engine, migrate

    path = tmp_path / "prbot.sqlite"
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    writer = DeliveryWriter(engine).start()  # makes the inbox file
    # The batch waits on the inbox's lock (its only other writer is the mover's delete).
    other = sqlite3.connect(
        tmp_path / "prbot.sqlite-inbox", isolation_level=None, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")
    body = json.dumps({"action": "created", "installation": {"id": 9}}).encode()

    async def client_leaves_then_another_comes():
        gone = asyncio.ensure_future(writer.store(_headers("installation", "gone"), body))
        await asyncio.sleep(0.05)
        gone.cancel()  # the client disconnected while its delivery was being written
        threading.Timer(0.1, other.execute, args=("COMMIT",)).start()
        late = await writer.store(_headers("installation", "next"), body)
        return gone, late

    try:
        gone, late = asyncio.run(client_leaves_then_another_comes())
    finally:
        writer.stop()
        other.close()
    assert gone.cancelled()
    assert (late.status, late.outcome) == (202, "accepted")
    # What was received is kept: GitHub's redelivery of "gone" will be a duplicate.
    assert deliveries.count_deliveries(engine) == 2
    engine.dispose()
