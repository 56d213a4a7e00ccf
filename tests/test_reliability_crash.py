"""A real `prbot serve` on SQLite SIGKILLed twice during a burst of signed deliveries, then
restarted: 0 acknowledged deliveries lost, 0 doubled comments, check runs or reactions, and
what arrived while it was down is redelivered by its repair job (bot/testing/crash.py; the
1,000-delivery run on PostgreSQL is benchmarks/crash_bench.py)."""

from __future__ import annotations

import pytest

from bot.testing.crash import CrashRun

pytestmark = pytest.mark.slow


def test_serve_killed_during_a_burst_loses_nothing_and_doubles_nothing(tmp_path):
    figures = CrashRun(tmp_path / "crash", prs=3, deliveries=12, kills=2, seed=3).run()
    assert figures.kills == 2
    assert figures.sent == 12 and figures.acknowledged > 0
    assert figures.lost == 0, figures
    assert figures.unrepaired == 0, figures
    assert figures.comments_per_pr == {1: 3}, figures
    assert figures.stale_prs == 0, figures
    assert figures.doubled_check_runs == 0 and figures.doubled_reactions == 0, figures
    assert figures.dead_jobs == 0, figures
