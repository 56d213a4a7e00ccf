"""WAL checkpoints on their own thread: the intake writer's commits never copy the log back."""

from __future__ import annotations

import asyncio
import json

from bot.intake.writer import DeliveryWriter
from bot.store import deliveries
from bot.store.db import make_engine, migrate
from bot.store.wal import DEFAULT_AUTOCHECKPOINT_PAGES, WalCheckpointer


def _sqlite(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    return engine


def _store_many(writer: DeliveryWriter, count: int, size: int = 20_000) -> None:
    filler = "x" * size

    async def burst():
        for start in range(0, count, 50):
            await asyncio.gather(
                *(
                    writer.store(
                        {
                            "x-github-event": "installation",
                            "x-github-delivery": f"g{n}",
                            "content-type": "application/json",
                        },
                        json.dumps(
                            {"action": "created", "installation": {"id": 9}, "pad": filler}
                        ).encode(),
                    )
                    for n in range(start, min(start + 50, count))
                )
            )

    asyncio.run(burst())


def test_the_intake_writer_leaves_the_log_to_the_checkpointer(tmp_path):
    engine = _sqlite(tmp_path)
    writer = DeliveryWriter(engine)
    # A checkpointer that only runs when asked, so the log is seen before and after.
    writer._checkpointer = WalCheckpointer(writer._inbox.engine, interval=3600)
    writer.start()
    try:
        _store_many(writer, 300)  # ~6 MB: past SQLite's 1,000-page automatic checkpoint
        wal = tmp_path / "prbot.sqlite-inbox-wal"
        assert wal.stat().st_size > DEFAULT_AUTOCHECKPOINT_PAGES * 4096  # nobody copied it back
        busy, frames, copied = writer._checkpointer.checkpoint_once()
        # A PASSIVE checkpoint copies the frames up to the oldest reader's snapshot: the inbox
        # mover reads the inbox on its own thread, so a read of its under way leaves the
        # newest frames for the next checkpoint (seen under load: 1,274 of 1,528).
        assert busy == 0 and frames > DEFAULT_AUTOCHECKPOINT_PAGES and 0 < copied <= frames
    finally:
        writer.stop()
    assert deliveries.count_deliveries(engine) == 300
    # The main database keeps SQLite's automatic checkpoints (the mover's and workers'
    # commits pay for them, off the request path).
    with engine.connect() as connection:
        pages = connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar()
    assert pages == DEFAULT_AUTOCHECKPOINT_PAGES
    engine.dispose()


def test_the_checkpointer_runs_after_writes_and_once_more_on_stop(tmp_path):
    engine = _sqlite(tmp_path)
    writer = DeliveryWriter(engine).start()
    try:
        _store_many(writer, 20, size=100)
    finally:
        writer.stop()
    assert writer._checkpointer.checkpoints >= 1
    # Everything stored is in the database file itself: a fresh engine reads it all.
    engine.dispose()
    again = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    assert deliveries.count_deliveries(again) == 20
    again.dispose()


def test_an_idle_checkpointer_stops_without_a_write(tmp_path):
    engine = _sqlite(tmp_path)
    checkpointer = WalCheckpointer(engine, interval=3600).start()
    checkpointer.stop()
    assert checkpointer.checkpoints == 1  # the last one on stop, harmless on an idle log
    engine.dispose()


def test_a_failing_checkpoint_is_logged_and_the_thread_goes_on(tmp_path, caplog):
    engine = _sqlite(tmp_path)
    checkpointer = WalCheckpointer(engine, interval=0.01)
    calls = []
    real = checkpointer.checkpoint_once

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("disk full")
        return real()

    checkpointer.checkpoint_once = flaky
    checkpointer.start()
    checkpointer.wrote()
    import time

    deadline = time.monotonic() + 10
    while len(calls) < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    checkpointer.wrote()
    checkpointer.stop()
    assert len(calls) >= 2 and checkpointer.checkpoints >= 1
    assert "WAL checkpoint failed" in caplog.text
    engine.dispose()
