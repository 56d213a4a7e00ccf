"""CI signal at the edge: a build's failed smoke jobs classified against the base branch's
history (``bot.jobs.ci_signal``), and a failure with no trunk history retried once first.

Called after a build's news is read into the records. It costs nothing when no smoke job
failed, and nothing for a failure already classified (a replayed webhook). Otherwise: one
call for the head build (every attempt of its jobs), and the base branch's builds through a
per-process cache (one listing per pipeline, repository and branch every ``HISTORY_TTL``
seconds, ``ceil(history_builds / 100)`` pages through the read-only adapter); a listing that
stops half-way is used for what it shows and never kept. The classification is stored on
the job's record (``ci_jobs.signal``), so every later re-render shows it without a call.

The retry (dispatch mode: the records are prbot's own builds): a ``new`` failure that did
not repeat on a retry of its commit gets one Buildkite job retry, then is classified again
when that attempt ends. Once per job and head, whatever happens: the effect
``ci-retry:<engine>:<repo>#<pr>@<head>:<job>`` is recorded before the call and finished after; a
finished effect is never retried again; a step with two attempts or more is never retried
(a crash after the call shows as the retried job's new attempt, which the record then
follows). The callers hold the build's lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bot.engines.base import BuildRef, EngineError
from bot.engines.buildkite_builds import PER_PAGE, BuildkiteBuilds
from bot.jobs.ci_history import History, read_history, step_identity
from bot.jobs.ci_signal import NEW, UNKNOWN, Classified, SignalRules, classify_build
from bot.jobs.selection import GPU_SMOKE
from bot.store import jobs as store
from bot.store import state

log = logging.getLogger(__name__)

HISTORY_TTL = 300.0
FAILED = ("failed", "timed_out")


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

    def get(
        self, reader: BuildkiteBuilds, repo: str, branch: str, *, limit: int, head_sha: str
    ) -> History:
        key = (reader.builds_url, repo, branch, limit)
        now = self.clock()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and now - kept.fetched_at < self.ttl:
            return kept.history
        listed = reader.builds_for_branch(
            branch, max_pages=-(-limit // PER_PAGE), retried_jobs=True, partial=True
        )
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


def classify_failures(
    db: sa.Engine,
    engine: Any,
    reader: BuildkiteBuilds | None,
    records: Sequence[store.JobRecord],
    context: Mapping[str, Any],
    *,
    histories: HistoryCache = HISTORIES,
) -> int:
    """Classify one build's failed smoke jobs and retry once where due; records changed."""
    raw = dict(context.get("ci_signal") or {})
    if raw.get("enabled") is False or reader is None:
        return 0
    failed = [
        r
        for r in records
        if r.kind == GPU_SMOKE
        and r.step_key
        and r.build_id
        and (r.signal or {}).get("job_url") != r.job_url
        and (r.state in FAILED or (r.state == "passed" and _retried(db, r)))
    ]
    if not failed:
        return 0  # nothing (new) failed: no call at all
    first = failed[0]
    ref = BuildRef(first.engine, first.build_id or "", first.build_number, first.build_url or "")
    rules = signal_rules(raw)
    branch = str(context.get("base_branch") or "main")
    changed = 0
    try:
        head_build = reader.build(int(first.build_number or 0))
    except EngineError as exc:
        for record in failed:
            signal = _unknown(record, f"the head build could not be read: {exc}")
            changed += store.set_signal(db, record, signal)
        return changed
    history = histories.get(
        reader, first.key.repo, branch, limit=rules.history_builds, head_sha=first.commit_sha
    )
    merge_base = context.get("merge_base")
    found = {
        c.identity: c
        for c in classify_build(head_build, history, rules, merge_base=merge_base or None)
    }
    for record in failed:
        result = found.get(step_identity({"step_key": record.step_key}) or "")
        if result is None:
            changed += store.set_signal(
                db, record, _unknown(record, "the build shows no failed job for this step")
            )
        elif result.running:
            # Retried (by prbot before a crash, or by someone on Buildkite): the record
            # follows the new attempt, and the build's news finishes it.
            changed += store.reopen_for_retry(db, record, job_url=result.job_url or None)
        elif (
            result.classification == NEW
            and not result.confirmed
            and raw.get("retry", True)
            and _retry_once(db, engine, ref, record, result)
        ):
            changed += 1
        else:
            changed += store.set_signal(db, record, {**result.to_json(), "branch": branch})
    return changed


def _retry_key(record: store.JobRecord) -> str:
    # Per job and head, not per build: a /recheck's new build of the same head gets none.
    key = record.key
    return f"ci-retry:{record.engine}:{key.repo}#{key.number}@{key.head_sha}:{key.name}"


def _retried(db: sa.Engine, record: store.JobRecord) -> bool:
    """prbot retried this job once (a pass after it is a flaky job's, and said so)."""
    effect = state.get_effect(db, _retry_key(record))
    return effect is not None and effect.state == "done"


def _retry_once(
    db: sa.Engine, engine: Any, ref: BuildRef, record: store.JobRecord, found: Classified
) -> bool:
    """One Buildkite job retry of a failure seen once; True when the record now waits on it."""
    retry = getattr(engine, "retry_job", None)
    if retry is None or not found.job_id or found.counts.get("head_attempts", 1) > 1:
        return False
    key = _retry_key(record)
    effect = state.get_effect(db, key)
    if effect is not None and effect.state == "done":
        return False  # retried once already: never twice, whatever the build shows now
    state.begin_effect(db, key, record.key.head_sha)
    try:
        retried = retry(ref, found.job_id)
    except EngineError as exc:
        log.warning("retry of %s in build %s refused: %s", found.identity, ref.id, exc)
        return False
    state.finish_effect(db, key, str(retried.get("id") or "") or None, record.key.head_sha)
    url = retried.get("web_url")
    return store.reopen_for_retry(db, record, job_url=url if isinstance(url, str) else None)
