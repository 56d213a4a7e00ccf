"""Which open PR heads the repair runs again, and when it gives up (bot/repair/head_sweeps.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.repair.head_sweeps import MAX_SWEEPS, plan_sweeps, sweep_spacing
from bot.store.sweeps import SweepRecord

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
SPACING = timedelta(minutes=10)
REPO = "acme/widgets"


def _plan(open_heads, reported=None, busy=None, records=None, *, limit=100, now=NOW):
    return plan_sweeps(
        open_heads,
        reported or {},
        busy or set(),
        records or {},
        now=now,
        spacing=SPACING,
        limit=limit,
    )


def _numbers(targets):
    return [t.number for t in targets]


def test_heads_without_a_current_report_are_queued_and_current_ones_are_not():
    open_heads = {(REPO, 1): "a1", (REPO, 2): "b2", (REPO, 3): "c2"}
    reported = {(REPO, 1): "a1", (REPO, 3): "c1"}  # 2: no report at all; 3: an older head's
    plan = _plan(open_heads, reported)
    assert _numbers(plan.queue) == [2, 3] and plan.give_up == []
    no_report, older = plan.queue
    assert (no_report.reported_head, no_report.sweeps) == (None, 0)
    assert older.reported_head == "c1" and older.current_head == "c2"
    assert "no report for b2" in no_report.reason and "report is for c1" in older.reason


def test_a_pr_with_a_pipeline_job_queued_or_running_is_left_to_it():
    plan = _plan({(REPO, 1): "a", (REPO, 2): "b"}, busy={(REPO, 1)})
    assert _numbers(plan.queue) == [2]


def test_sweeps_of_one_head_are_spaced_further_apart_each_time():
    assert [sweep_spacing(n, SPACING) for n in range(4)] == [
        timedelta(0),
        SPACING,
        2 * SPACING,
        4 * SPACING,
    ]
    open_heads = {(REPO, 1): "a"}
    # Two sweeps so far, the last 15 minutes ago: the third waits for 20.
    record = {(REPO, 1, "a"): SweepRecord(2, NOW - timedelta(minutes=15))}
    assert _plan(open_heads, records=record).queue == []
    later = _plan(open_heads, records=record, now=NOW + timedelta(minutes=5))
    assert [(t.number, t.sweeps) for t in later.queue] == [(1, 2)]


def test_after_the_last_sweep_the_head_is_given_up_once():
    open_heads = {(REPO, 1): "a"}
    spent = {(REPO, 1, "a"): SweepRecord(MAX_SWEEPS, NOW - timedelta(seconds=1))}
    plan = _plan(open_heads, records=spent)
    assert plan.queue == [] and [(t.number, t.sweeps) for t in plan.give_up] == [(1, MAX_SWEEPS)]
    # ...not while the last sweep's job may still report it,
    assert _plan(open_heads, records=spent, busy={(REPO, 1)}).give_up == []
    # ...and never again once given up.
    given_up = {(REPO, 1, "a"): SweepRecord(MAX_SWEEPS, NOW, gave_up=True)}
    plan = _plan(open_heads, records=given_up)
    assert plan.queue == [] and plan.give_up == []


def test_the_count_is_per_head_so_a_new_push_starts_again():
    # The old head used every sweep; the PR moved on to a head never swept.
    spent = {(REPO, 1, "old"): SweepRecord(MAX_SWEEPS, NOW, gave_up=True)}
    plan = _plan({(REPO, 1): "new"}, {(REPO, 1): "old"}, records=spent)
    assert [(t.current_head, t.sweeps) for t in plan.queue] == [("new", 0)]


def test_one_run_does_at_most_limit_things():
    open_heads = {(REPO, n): f"h{n}" for n in range(1, 6)}
    spent = {(REPO, 1, "h1"): SweepRecord(MAX_SWEEPS, NOW)}
    plan = _plan(open_heads, records=spent, limit=3)
    assert _numbers(plan.give_up) == [1] and _numbers(plan.queue) == [2, 3]
