"""The sweep counts (bot/store/sweeps.py) on SQLite and PostgreSQL: counted per head, read
back only for heads still open and current, given up once, forgotten after retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from bot.store.queue import Queue
from bot.store.schema import open_prs
from bot.store.sweeps import (
    SweepRecord,
    forget_sweeps,
    last_pipeline_error,
    pipeline_key,
    record_gave_up,
    record_sweep,
    sweep_count,
    sweep_inputs,
)

REPO = "acme/widgets"
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _open_pr(engine, number, head, state="open"):
    with engine.begin() as connection:
        connection.execute(
            sa.insert(open_prs).values(
                repo=REPO,
                number=number,
                state=state,
                title="t",
                body="",
                author="a",
                updated_at="2026-03-01T00:00:00Z",
                head_sha=head,
                files_known=False,
                patches_known=False,
                features={},
                seq=1,
            )
        )


def test_sweeps_are_counted_per_head_and_read_for_current_open_heads(engine):
    _open_pr(engine, 1, "new")
    _open_pr(engine, 2, "gone", state="closed")
    assert record_sweep(engine, REPO, 1, "new", T0) == 1
    assert record_sweep(engine, REPO, 1, "new", T0 + timedelta(minutes=10)) == 2
    record_sweep(engine, REPO, 1, "old", T0)  # an earlier head of the same PR
    record_sweep(engine, REPO, 2, "gone", T0)
    inputs = sweep_inputs(engine)
    assert inputs.open_heads == {(REPO, 1): "new"}
    assert inputs.records == {(REPO, 1, "new"): SweepRecord(2, T0 + timedelta(minutes=10))}
    record_gave_up(engine, REPO, 1, "new", T0 + timedelta(hours=1))
    assert sweep_inputs(engine).records[(REPO, 1, "new")].gave_up
    assert forget_sweeps(engine, T0 + timedelta(minutes=5)) == 2  # "old" and "gone"
    assert sweep_count(engine, REPO, 1, "new") == 2 and sweep_count(engine, REPO, 1, "old") == 0


def test_busy_prs_and_the_last_dead_error_come_from_the_queue(engine):
    queue = Queue(engine, max_attempts=1)
    queue.enqueue("pipeline", {}, dedupe_key=f"pipeline:{REPO}#3")
    queue.enqueue("reconcile", {}, dedupe_key=f"reconcile:{REPO}")
    assert sweep_inputs(engine).busy == {(REPO, 3)}
    job = queue.lease("w")
    assert queue.fail(job, "GitError: fetch failed") == "dead"
    assert sweep_inputs(engine).busy == set()
    assert last_pipeline_error(engine, REPO, 3) == "GitError: fetch failed"
    assert last_pipeline_error(engine, REPO, 4) is None
    assert pipeline_key("pipeline:a/b#12") == ("a/b", 12)
    assert pipeline_key("reconcile:a/b") is None and pipeline_key("pipeline:a/b#x") is None
