"""The intake's batched writer: one transaction per batch, each request its own answer."""

from __future__ import annotations

import asyncio
import json

from bot.intake_writer import DeliveryWriter
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


def test_the_writer_waits_out_another_process_holding_the_sqlite_lock(tmp_path):
    import sqlite3
    import threading

    from bot.store.db import make_engine, migrate

    path = tmp_path / "prbot.sqlite"
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    # Like a worker process holding the write lock for a while.
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, other.execute, args=("COMMIT",))
    writer = DeliveryWriter(engine).start()
    body = json.dumps({"action": "created", "installation": {"id": 9}}).encode()
    try:
        release.start()
        answer = asyncio.run(writer.store(_headers("installation", "late"), body))
    finally:
        release.join()
        writer.stop()
        other.close()
    assert (answer.status, answer.outcome) == (202, "accepted")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10000
    engine.dispose()
