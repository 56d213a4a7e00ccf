"""CI signal at the edge: a build's failed jobs classified against the base branch's history
(``bot.jobs.ci_signal``), and a failure with no trunk history retried once first.

Every engine answers through the same interface (``bot.engines.base.Engine``: the head
build with every attempt, the base branch's builds, one retry), in Buildkite's build shape,
so nothing here knows an engine by name. Called after a build's news is read into the
records. It costs nothing when no job failed, and nothing for a failure already classified
(a replayed webhook). Otherwise: the head build (every attempt of its jobs), and the base
branch's builds through a per-process cache (one listing per engine source, repository and
branch every ``HISTORY_TTL`` seconds, bounded by ``history_builds``); a listing that stops
half-way is used for what it shows and never kept. The classification is stored on the
job's record (``ci_jobs.signal``), so every later re-render shows it without a call.

The retry (dispatch mode: the records are prbot's own builds): a ``new`` smoke failure that
did not repeat on a retry of its commit gets one retry through the engine (Buildkite's job
retry; Actions' re-run failed jobs, once the run finished: GitHub re-runs all of its
failures, and each of their records follows its new attempt), then is classified again
when that attempt ends. Once
per job and head, whatever happens: the effect ``ci-retry:<engine>:<repo>#<pr>@<head>:<job>``
is recorded before the call and finished after; a finished effect is never retried again; a
step with two attempts or more is never retried (a crash after the call shows as the
retried job's new attempt, which the record then follows). A pass is classified (flaky)
only in the dispatch prbot retried it in: the effect keeps the record's ``dispatch_key``,
which neither engine changes when the record follows a retry or a re-run, and a /recheck's
new build of the head is a new dispatch whose pass at once has no failure to explain. A
benchmark job is classified and never retried: it holds a GPU for up to its whole timeout,
and /recheck re-runs it. The callers hold the build's lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bot.engines.base import BuildList, BuildRef, Engine, EngineError
from bot.jobs.ci_history import RUNNING_STATES, History, read_history, step_identity
from bot.jobs.ci_signal import NEW, UNKNOWN, Classified, SignalRules, classify_build
from bot.jobs.selection import BENCHMARK, GPU_SMOKE
from bot.store import jobs as store
from bot.store import state

log = logging.getLogger(__name__)

HISTORY_TTL = 300.0
FAILED = ("failed", "timed_out")
# A failed benchmark is classified too (a prbot bench run job: its step rarely runs on the
# base branch, so mostly unknown, with the reason), never dropped from the grouped section.
CLASSIFIED_KINDS = (GPU_SMOKE, BENCHMARK)


@dataclass(frozen=True)
class _Kept:
    history: History
    fetched_at: float


class HistoryCache:
    """Base-branch histories by (pipeline, repository, branch, bound), each kept ``ttl``
    seconds; a read that stopped early is never kept."""

    def __init__(self, ttl: float = HISTORY_TTL, clock: Callable[[], float] = time.monotonic):
        self.ttl, self.clock = ttl, clock
        self._kept: dict[tuple[str, str, str, int], _Kept] = {}
        self._lock = threading.Lock()

    def get(self, engine: Engine, repo: str, branch: str, *, limit: int, head_sha: str) -> History:
        key = (engine.history_source, repo, branch, limit)
        now = self.clock()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and now - kept.fetched_at < self.ttl:
            return kept.history
        try:
            listed = engine.branch_builds(repo, branch, limit=limit)
        except EngineError as exc:
            # Read as one that stopped at once: every failure unknown with why, never a crash.
            listed = BuildList((), True, 0, str(exc))
        history = read_history(
            listed.builds,
            branch,
            limit=limit,
            complete=listed.stopped is None,
            stopped=listed.stopped,
            exclude_commit=head_sha,
        )
        if listed.stopped is None:
            with self._lock:
                self._kept[key] = _Kept(history, now)
        return history


HISTORIES = HistoryCache()


def signal_rules(raw: Mapping[str, Any]) -> SignalRules:
    """The thresholds the report's context carries (``checks.jobs.ci_signal``)."""
    defaults = SignalRules()
    return SignalRules(
        **{
            name: int(raw.get(name, getattr(defaults, name)))
            for name in (
                "history_builds",
                "broken_trunk_builds",
                "flaky_window",
                "flaky_failures",
                "min_base_runs",
            )
        }
    )


def _unknown(record: store.JobRecord, why: str) -> dict[str, Any]:
    return {
        "classification": UNKNOWN,
        "reason": why,
        "evidence": [],
        "job_url": record.job_url or "",
        "base_job_url": "",
        "base_builds_seen": 0,
        "confirmed": False,
    }


def _failed(db: sa.Engine, record: store.JobRecord) -> bool:
    """A job to classify: failed (or passed after prbot's retry), and not classified yet at
    this attempt (a replayed news changes nothing)."""
    return (
        record.kind in CLASSIFIED_KINDS
        and bool(record.step_key)
        and bool(record.build_id)
        and (record.signal or {}).get("job_url") != record.job_url
        and (record.state in FAILED or (record.state == "passed" and _retried_in(db, record)))
    )


def classify_failures(
    db: sa.Engine,
    engine: Engine,
    records: Sequence[store.JobRecord],
    context: Mapping[str, Any],
    *,
    histories: HistoryCache = HISTORIES,
) -> int:
    """Classify one build's failed jobs and retry once where due; records changed."""
    raw = dict(context.get("ci_signal") or {})
    if raw.get("enabled") is False:
        return 0
    failed = [r for r in records if _failed(db, r)]
    if not failed:
        return 0  # nothing (new) failed: no call at all
    first = failed[0]
    ref = BuildRef(first.engine, first.build_id or "", first.build_number, first.build_url or "")
    rules = signal_rules(raw)
    branch = str(context.get("base_branch") or "main")
    changed = 0
    try:
        head_build = engine.head_build(ref)
    except EngineError as exc:
        for record in failed:
            signal = _unknown(record, f"the head build could not be read: {exc}")
            changed += store.set_signal(db, record, signal)
        return changed
    history = histories.get(
        engine, first.key.repo, branch, limit=rules.history_builds, head_sha=first.commit_sha
    )
    merge_base = context.get("merge_base")
    found = {
        c.identity: c
        for c in classify_build(head_build, history, rules, merge_base=merge_base or None)
    }
    due: list[tuple[store.JobRecord, Classified]] = []
    for record in failed:
        result = found.get(step_identity({"step_key": record.step_key}) or "")
        if result is None:
            why = "the build shows no failed job for this step"
            if record.error:
                why = f"{record.error}; {why}"
            changed += store.set_signal(db, record, _unknown(record, why))
        elif result.running:
            # Retried (by prbot before a crash, or by someone on the engine): the record
            # follows the new attempt, and the build's news finishes it.
            changed += store.reopen_for_retry(db, record, job_url=result.job_url or None)
        elif (
            result.classification == NEW
            and not result.confirmed
            and raw.get("retry", True)
            and record.kind == GPU_SMOKE
            and _may_retry(db, record, result)
        ):
            due.append((record, result))
        else:
            changed += store.set_signal(db, record, {**result.to_json(), "branch": branch})
    if due and engine.retry_waits_for_build and head_build.get("state") in RUNNING_STATES:
        # Retried with the build's other failures once it finished: unclassified until then,
        # and the build's next news classifies them.
        return changed
    retried = _retry_once(db, engine, ref, due)
    for record, result in due:
        if result.job_id in retried:
            url = retried[result.job_id]
            changed += store.reopen_for_retry(db, record, job_url=url or None)
        else:
            changed += store.set_signal(db, record, {**result.to_json(), "branch": branch})
    if retried and engine.retry_waits_for_build:
        changed += _follow_whole_rerun(db, records, ref, {r.id for r, _ in due})
    return changed


def _follow_whole_rerun(
    db: sa.Engine, records: Sequence[store.JobRecord], ref: BuildRef, due: set[int]
) -> int:
    """The build's other failures were re-run with it (GitHub re-runs every failed job of
    the run): each follows its new attempt, as prbot's one retry of it."""
    changed = 0
    for record in records:
        if record.id in due or record.build_id != ref.id or record.state not in FAILED:
            continue
        key = _retry_key(record)
        state.begin_effect(db, key, record.key.head_sha)
        state.finish_effect(db, key, _retry_external(record, ""), record.key.head_sha)
        changed += store.reopen_for_retry(db, record, job_url=None)
    return changed


def _retry_key(record: store.JobRecord) -> str:
    # Per job and head, not per build: a /recheck's new build of the same head gets none.
    key = record.key
    return f"ci-retry:{record.engine}:{key.repo}#{key.number}@{key.head_sha}:{key.name}"


def _retried(db: sa.Engine, record: store.JobRecord) -> bool:
    """prbot retried this job once, in any dispatch of its head (never again)."""
    effect = state.get_effect(db, _retry_key(record))
    return effect is not None and effect.state == "done"


def _retry_external(record: store.JobRecord, job_id: str) -> str:
    """The retry effect's external id: ``<dispatch key>:<job id>`` (job ids hold no colon)."""
    return f"{record.dispatch_key or ''}:{job_id}"


def _retried_in(db: sa.Engine, record: store.JobRecord) -> bool:
    """prbot's one retry was in this record's dispatch, so its pass is a flaky job's (and
    said so). An effect stored before the dispatch key was kept in it (a bare job id, or
    none) is taken as this dispatch's, as it was then."""
    effect = state.get_effect(db, _retry_key(record))
    if effect is None or effect.state != "done":
        return False
    dispatch, colon, _ = (effect.external_id or "").rpartition(":")
    return not colon or dispatch == (record.dispatch_key or "")


def _may_retry(db: sa.Engine, record: store.JobRecord, found: Classified) -> bool:
    """A failure seen once, never retried by prbot (whatever the build shows now)."""
    return (
        bool(found.job_id)
        and found.counts.get("head_attempts", 1) <= 1
        and not _retried(db, record)
    )


def _retry_once(
    db: sa.Engine,
    engine: Engine,
    ref: BuildRef,
    due: Sequence[tuple[store.JobRecord, Classified]],
) -> dict[str, str]:
    """One retry of each failure seen once, in one engine call: ``{job id: new URL}``."""
    if not due:
        return {}
    for record, _ in due:
        state.begin_effect(db, _retry_key(record), record.key.head_sha)
    try:
        retried = engine.retry_failed(ref, [found.job_id for _, found in due])
    except EngineError as exc:
        log.warning("retry in build %s refused: %s", ref.id, exc)
        return {}
    for record, found in due:
        if found.job_id in retried:
            external = _retry_external(record, found.job_id)
            state.finish_effect(db, _retry_key(record), external, record.key.head_sha)
    return retried
