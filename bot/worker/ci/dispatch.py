"""Carrying out a dispatch plan over the engines, with every step recorded first.

Under one lock per PR head: jobs awaiting approval are recorded; claimed dispatches whose
build was never recorded (a crash between create and record) are looked up at the engine by
their key and recorded, or created; then the head is re-checked on GitHub (as vLLM's
``/ci run`` does: a push since the event means the jobs are for a commit nobody looks at)
and each new dispatch is claimed, created, recorded. A refusal is stored on the jobs with its
one-line reason; an engine that could not be reached leaves the claim for the retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from bot.engines.base import DISPATCH_META, BuildRef, BuildRequest, Engine, EngineError
from bot.jobs.planner import Dispatch, Head, Plan
from bot.runtime.locks import named_lock
from bot.store import jobs as store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PullContext:
    """What a build needs to know about the PR besides its commit."""

    branch: str
    base_branch: str
    labels: tuple[str, ...] = ()


@dataclass
class Outcome:
    created: int = 0
    resumed: int = 0
    refused: list[str] = field(default_factory=list)
    head_moved: str | None = None
    transient: list[str] = field(default_factory=list)  # raise after the others were tried


def _request(head: Head, pull: PullContext, dispatch: Dispatch, key: str) -> BuildRequest:
    base_side = dispatch.side == "base"
    return BuildRequest(
        repo=head.repo,
        pr_number=head.number,
        head_sha=dispatch.commit_sha,
        branch=pull.base_branch if base_side else pull.branch,
        base_branch=pull.base_branch,
        message=(
            f"prbot: benchmark base for #{head.number} ({head.head_sha[:12]})"
            if base_side
            else f"prbot: GPU jobs for #{head.number}"
        ),
        step_keys=dispatch.step_keys,
        meta_data={DISPATCH_META: key},
        env=dict(dispatch.env),
        labels=pull.labels,
    )


def _record(db: sa.Engine, key: str, ref: BuildRef) -> None:
    store.record_build(
        db,
        key,
        engine_name=ref.engine,
        build_id=ref.id,
        build_number=ref.number,
        build_url=ref.web_url,
    )


def _resume(
    db: sa.Engine,
    key: str,
    engines: Callable[[str], Engine],
    head: Head,
    pull: PullContext,
    moved: bool,
    outcome: Outcome,
) -> None:
    records = [r for r in store.records_for_dispatch(db, key) if r.claimed_without_build]
    if not records:
        return
    first = records[0]
    engine = engines(first.engine)
    ref = engine.find_build(key, first.commit_sha, repo=first.key.repo, pr=first.key.number)
    if ref is None and moved:
        store.fail_dispatch(db, key, "not started: the PR's head moved", state="canceled")
        return
    if ref is None:
        specs = tuple(
            (
                store.JobSpec(
                    r.key, r.commit_sha, r.kind, r.engine, r.hardware, r.step_key, r.spec
                ),
                r.attempt,
            )
            for r in records
        )
        env = dict(first.spec.get("env") or {})
        again = Dispatch(first.engine, first.key.side, first.commit_sha, specs, env, key)
        ref = engine.create_build(_request(head, pull, again, key))
        outcome.created += 1
    _record(db, key, ref)
    outcome.resumed += 1


def execute(
    db: sa.Engine,
    plan: Plan,
    head: Head,
    pull: PullContext,
    *,
    engines: Callable[[str], Engine],
    current_head: Callable[[], str | None],
    lock_dir: Path,
) -> Outcome:
    """Record, resume and dispatch what ``plan`` says; raise EngineError if one was transient."""
    outcome = Outcome()
    with named_lock(db, f"jobs:{head.repo}#{head.number}@{head.head_sha}", lock_dir):
        for spec in plan.awaiting:
            store.note_undispatched(db, spec, "awaiting_approval")
        for spec in plan.selected:
            store.note_undispatched(db, spec, "selected")
        if not (plan.dispatches or plan.resume):
            return outcome
        now = current_head()
        moved = now is not None and now != head.head_sha
        if moved:
            outcome.head_moved = now
        for key in plan.resume:
            try:
                _resume(db, key, engines, head, pull, moved, outcome)
            except EngineError as exc:
                _refused(db, key, exc, outcome)
        if moved:
            log.info("%s#%s: head moved to %s, nothing dispatched", head.repo, head.number, now)
            return outcome
        for dispatch in plan.dispatches:
            won = [
                (spec, attempt)
                for spec, attempt in dispatch.jobs
                if store.claim(
                    db,
                    _with_env(spec, dispatch.env),
                    attempt=attempt,
                    dispatch_key=dispatch.dispatch_key,
                )
            ]
            if not won:
                continue  # a concurrent or earlier delivery claimed every one of them
            claimed = Dispatch(
                dispatch.engine,
                dispatch.side,
                dispatch.commit_sha,
                tuple(won),
                dispatch.env,
                dispatch.dispatch_key,
            )
            try:
                ref = engines(dispatch.engine).create_build(
                    _request(head, pull, claimed, dispatch.dispatch_key)
                )
            except EngineError as exc:
                _refused(db, dispatch.dispatch_key, exc, outcome)
                continue
            _record(db, dispatch.dispatch_key, ref)
            outcome.created += 1
    if outcome.transient:
        raise EngineError("; ".join(outcome.transient), transient=True)
    return outcome


def _with_env(spec: store.JobSpec, env: Mapping[str, str]) -> store.JobSpec:
    """The record keeps the env its build got, so a resumed dispatch sends the same."""
    if not env:
        return spec
    return store.JobSpec(
        spec.key,
        spec.commit_sha,
        spec.kind,
        spec.engine,
        spec.hardware,
        spec.step_key,
        {**spec.spec, "env": dict(env)},
    )


def _refused(db: sa.Engine, key: str, exc: EngineError, outcome: Outcome) -> None:
    if exc.transient:
        log.warning("dispatch %s: %s (will retry)", key, exc)
        outcome.transient.append(str(exc))
        return
    log.warning("dispatch %s refused: %s", key, exc)
    store.fail_dispatch(db, key, str(exc))
    outcome.refused.append(str(exc))
