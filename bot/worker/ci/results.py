"""Reading a build's jobs back into the records: states, links, benchmark results.

Webhooks only say that something happened (``build.finished`` carries no jobs and may say
``blocked: true``), so the engine's API is asked for every job of the build and each record
takes its step's state. A benchmark that passed has its JSON artifacts read (bounded in size
and number, and parsed as data): one file per run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from bot.engines.base import BuildRef, Engine, EngineError, JobState
from bot.jobs.benchmark_results import NAMING, ResultError, parse_results
from bot.jobs.paired_runs import BY_BATCH_SPEC, RUN_NAME, parse_sides, sides_from_files
from bot.jobs.selection import BENCHMARK
from bot.store import jobs as store

log = logging.getLogger(__name__)

MAX_ARTIFACT_BYTES = 5_000_000
MAX_RESULT_FILES = 50
# Configurations kept per run: a results file comes out of the PR's own code, and every
# configuration becomes a comparison in the report.
MAX_CONFIGS = 500

# Buildkite's job states -> the report's.
ENGINE_STATES = {
    "pending": "queued",
    "waiting": "queued",
    "blocked": "queued",
    "unblocked": "queued",
    "limiting": "queued",
    "limited": "queued",
    "scheduled": "queued",
    "assigned": "queued",
    "accepted": "queued",
    "reserved": "queued",
    "running": "running",
    "canceling": "running",
    "timing_out": "running",
    "passed": "passed",
    "failed": "failed",
    "broken": "canceled",
    "timed_out": "timed_out",
    "expired": "timed_out",
    "canceled": "canceled",
    "skipped": "canceled",
    "not_run": "canceled",
    "waiting_failed": "canceled",
    # GitHub Actions' conclusions (bot/engines/actions.py).
    "success": "passed",
    "failure": "failed",
    "cancelled": "canceled",
    "action_required": "queued",
    "in_progress": "running",
    "neutral": "passed",
    "stale": "canceled",
}


def record_state(engine_state: str) -> str:
    """The report's state for an engine's word; one prbot does not know counts as queued."""
    return ENGINE_STATES.get(engine_state, "queued")


@dataclass(frozen=True)
class Refresh:
    changed: int
    problems: tuple[str, ...] = ()


def paired_file(name: str) -> bool:
    """A file of ``prbot bench run``'s layout: ``base/run-<round>.json``, ``head/...``."""
    parts = name.replace("\\", "/").split("/")
    return len(parts) >= 2 and parts[-2] in ("base", "head") and bool(RUN_NAME.match(parts[-1]))


def _results(
    engine: Engine, build: BuildRef, job: JobState, spec: dict | None = None
) -> tuple[list[dict], list[str]]:
    """One benchmark job's results: its paired sides (``[{"paired": ...}]``, judged when the
    section is drawn), or, from a build of the older layout, one run per JSON file."""
    spec = spec or {}
    try:
        files, problems = engine.result_files(
            build, job, limit=MAX_ARTIFACT_BYTES, max_files=MAX_RESULT_FILES
        )
    except EngineError as exc:
        return [], [str(exc)]
    if any(paired_file(name) for name, _ in files):
        sides = sides_from_files(files)
        naming = BY_BATCH_SPEC if spec.get("compare") == "backends" else NAMING
        parsed = parse_sides(sides["base"], sides["head"], naming=naming)
        return [{"paired": parsed}], problems
    runs = []
    for name, blob in files:
        try:
            run = parse_results(blob, name)
        except ResultError as exc:
            problems.append(str(exc))
            continue
        if len(run) > MAX_CONFIGS:
            problems.append(f"{name}: {len(run)} configurations; the first {MAX_CONFIGS} kept")
            run = dict(list(run.items())[:MAX_CONFIGS])
        runs.append(run)
    return runs, problems


def refresh_build(
    db: sa.Engine,
    engine: Engine,
    records: Sequence[store.JobRecord],
    *,
    build_finished: bool = False,
) -> Refresh:
    """Ask the engine about the build of ``records`` and store what it says; how many changed."""
    first = next((r for r in records if r.build_id), None)
    if first is None or not any(r.state in store.ACTIVE for r in records):
        return Refresh(0)  # nothing to learn: a replay after every job finished
    ref = BuildRef(first.engine, first.build_id, first.build_number, first.build_url or "")
    by_step = {job.step_key: job for job in engine.jobs(ref)}
    changed, problems = 0, []
    for record in records:
        if record.build_id != first.build_id or record.state not in store.ACTIVE:
            continue  # finished already: a replayed webhook changes nothing
        job = by_step.get(record.step_key)
        if job is None:
            if build_finished:
                changed += store.update_result(
                    db,
                    record,
                    state="canceled",
                    error="the build finished without running this step (blocked or skipped)",
                )
            continue
        state = record_state(job.state)
        results = None
        error = None
        if state == "passed" and record.kind == BENCHMARK:
            results, trouble = _results(engine, ref, job, record.spec)
            problems.extend(trouble)
            if not results:
                state, error = "failed", "passed, but no benchmark results could be read"
                if trouble:
                    error += f" ({trouble[0]})"
        if state == record.state and job.web_url == record.job_url and results is None:
            continue
        changed += store.update_result(
            db, record, state=state, job_url=job.web_url or None, results=results, error=error
        )
    for problem in problems:
        log.warning("build %s: %s", first.build_id, problem)
    return Refresh(changed, tuple(problems))
