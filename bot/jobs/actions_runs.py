"""GitHub Actions' workflow runs read as Buildkite builds, so CI signal classifies them with
the same code (bot/jobs/ci_history.py, bot/jobs/ci_signal.py). Pure: REST shapes in.

A run (``GET …/actions/workflows/{workflow}/runs``) is a build: its ``run_number`` the
build's number, ``head_sha`` its commit, ``head_branch`` its branch. Its jobs as
``GET …/actions/runs/{id}/jobs?filter=all`` lists them (every attempt: a "re-run failed
jobs" adds an attempt, ``run_attempt`` one up, with new job ids) are its jobs: the jobs of
one name form one step, their attempts chained in attempt order through
``retried_in_job_id``, as Buildkite chains a retried job. A conclusion becomes Buildkite's
word for it (``failure`` -> ``failed``); a job not completed yet is ``scheduled`` or
``running``. Every walk is bounded by the caller's page limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bot.jobs.ci_history import int_of, text_of

# A job's conclusion -> Buildkite's state word (bot/jobs/ci_history.py reads those).
CONCLUSIONS = {
    "success": "passed",
    "failure": "failed",
    "timed_out": "timed_out",
    "cancelled": "canceled",
    "skipped": "skipped",
    "neutral": "passed",
    "stale": "canceled",
    "action_required": "blocked",
    "startup_failure": "failed",
}
# A job's status while it has no conclusion.
STATUSES = {"in_progress": "running"}


def job_state(job: Mapping[str, Any]) -> str:
    """Buildkite's word for an Actions job's status and conclusion; a conclusion prbot does
    not know is kept as it is (neither a failure nor a pass: never a guess)."""
    return _state(job)


def run_state(run: Mapping[str, Any]) -> str:
    return _state(run)


def _state(item: Mapping[str, Any]) -> str:
    if item.get("status") != "completed":
        return STATUSES.get(text_of(item.get("status")), "scheduled")
    conclusion = text_of(item.get("conclusion"))
    return CONCLUSIONS.get(conclusion, conclusion or "unknown")


def _jobs(jobs: Iterable[object]) -> list[dict[str, Any]]:
    """Each job once, in Buildkite's shape, attempts of one name chained oldest first."""
    by_id: dict[int, Mapping[str, Any]] = {}
    for job in jobs:
        if isinstance(job, dict) and int_of(job.get("id")) is not None and text_of(job.get("name")):
            by_id.setdefault(job["id"], job)
    ordered = sorted(by_id.values(), key=lambda j: (int_of(j.get("run_attempt")) or 1, j["id"]))
    following: dict[int, int] = {}
    last_of_name: dict[str, int] = {}
    for job in ordered:
        name = job["name"]
        if name in last_of_name:
            following[last_of_name[name]] = job["id"]
        last_of_name[name] = job["id"]
    shaped = []
    for job in ordered:
        retried_in = following.get(job["id"])
        state = job_state(job)
        shaped.append(
            {
                "id": str(job["id"]),
                "type": "script",
                "name": job["name"],
                "step_key": job["name"],
                "state": state,
                "exit_status": {"passed": 0, "failed": 1}.get(state),
                "soft_failed": False,
                "retried": retried_in is not None,
                "retried_in_job_id": str(retried_in) if retried_in is not None else None,
                "retries_count": (int_of(job.get("run_attempt")) or 1) - 1 or None,
                "started_at": job.get("started_at"),
                "finished_at": job.get("completed_at"),
                "web_url": text_of(job.get("html_url")),
            }
        )
    return shaped


def build_of_run(
    run: Mapping[str, Any], jobs: Iterable[object], *, commit: str | None = None
) -> dict[str, Any]:
    """One workflow run and its jobs (every attempt) as a Buildkite build object.

    ``commit``: the commit the run tested when that is not its ``head_sha`` (prbot's own
    runs are dispatched on the base branch; the PR head is an input)."""
    return {
        "id": str(run.get("id") or ""),
        "number": int_of(run.get("run_number")),
        "state": run_state(run),
        "branch": text_of(run.get("head_branch")),
        "commit": commit if commit is not None else text_of(run.get("head_sha")),
        "web_url": text_of(run.get("html_url")),
        "jobs": _jobs(jobs),
    }
