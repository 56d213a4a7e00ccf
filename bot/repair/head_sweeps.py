"""Which open PR heads the periodic repair re-runs, as decisions over data (no I/O).

Every open PR should end with one report for its current head. A head can miss it in two
ways: the event for it was lost (the PR's latest report is for an older head), or its
pipeline job used up its attempts (the head has no report at all). The repair job
(bot/repair/redeliver.py) queues a run for such heads, but boundedly: at most ``max_sweeps`` runs
per
(repo, PR, head), each further one waiting twice as long as the one before, and after the
last one the PR gets a report that says the run failed instead of being swept for ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.store.sweeps import SweepRecord

# Runs the repair queues for one head before it publishes the failure instead. With the
# worker's own attempts (PRBOT_MAX_ATTEMPTS) that is up to (1 + 3) x 5 tries of one head.
MAX_SWEEPS = 3


@dataclass(frozen=True)
class HeadToSweep:
    repo: str
    number: int
    current_head: str
    reported_head: str | None  # None: the PR has no report at all
    sweeps: int  # sweeps of this head before this one

    @property
    def reason(self) -> str:
        if self.reported_head is None:
            return f"repair: no report for {self.current_head[:12]} (sweep {self.sweeps + 1})"
        return f"repair: report is for {self.reported_head[:12]} (sweep {self.sweeps + 1})"


@dataclass
class SweepPlan:
    queue: list[HeadToSweep] = field(default_factory=list)  # run the pipeline again
    give_up: list[HeadToSweep] = field(default_factory=list)  # publish "the run failed"


def sweep_spacing(sweeps_done: int, base: timedelta) -> timedelta:
    """How long after the last sweep the next may be queued: none before the first, then
    ``base``, twice that, four times that..."""
    return base * 2 ** (sweeps_done - 1) if sweeps_done > 0 else timedelta(0)


def plan_sweeps(
    open_heads: Mapping[tuple[str, int], str],
    reported_heads: Mapping[tuple[str, int], str],
    busy: set[tuple[str, int]],
    records: Mapping[tuple[str, int, str], SweepRecord],
    *,
    now: datetime,
    spacing: timedelta,
    max_sweeps: int = MAX_SWEEPS,
    limit: int,
) -> SweepPlan:
    """The heads to queue again and those to give up on, at most ``limit`` together.

    A head is skipped when its PR's latest report is for it, when a pipeline job for the PR
    is already queued or running (that job may still report it), when the repair already
    gave up on it, and while the spacing since its last sweep has not passed.
    """
    plan = SweepPlan()
    for key in sorted(open_heads):
        if len(plan.queue) + len(plan.give_up) >= limit:
            break
        head = open_heads[key]
        reported = reported_heads.get(key)
        if reported == head or key in busy:
            continue
        record = records.get((key[0], key[1], head))
        if record is not None and record.gave_up:
            continue
        done = record.sweeps if record is not None else 0
        target = HeadToSweep(key[0], key[1], head, reported, done)
        if done >= max_sweeps:
            plan.give_up.append(target)
        elif record is None or now - record.last_swept_at >= sweep_spacing(done, spacing):
            plan.queue.append(target)
    return plan
