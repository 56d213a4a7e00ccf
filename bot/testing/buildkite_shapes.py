"""Buildkite builds and jobs in the REST API's shape, for the test server, tests and benchmarks.

The fields are the ones ``GET /v2/organizations/{org}/pipelines/{pipeline}/builds`` returns
with ``include_retried_jobs=true``: a retried job stays in the list with ``retried: true``
and ``retried_in_job_id`` naming its retry, whose ``retries_count`` counts up. Waiter,
block (``manual``) and trigger jobs are in the list too, as in a real build.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

WEB = "https://buildkite.com/acme/ci"
EPOCH = datetime(2026, 11, 1, tzinfo=UTC)


def _stamp(minutes: float) -> str:
    return (EPOCH + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def script_job(
    build_number: int,
    step_key: str | None,
    state: str,
    *,
    name: str | None = None,
    web: str = WEB,
    soft_failed: bool = False,
    retried_in: str | None = None,
    retries_count: int | None = None,
    parallel_group_index: int | None = None,
    minute: float = 0,
    job_id: str | None = None,
) -> dict[str, Any]:
    job_id = job_id or str(uuid.uuid4())
    failed = state in ("failed", "timed_out")
    return {
        "id": job_id,
        "graphql_id": f"Sm9iLS0t{job_id[:8]}",
        "type": "script",
        "name": name if name is not None else (step_key or ""),
        "step_key": step_key,
        "priority": {"number": 0},
        "agent_query_rules": ["queue=gpu"],
        "state": state,
        "build_url": f"https://api.buildkite.com/v2/organizations/acme/pipelines/ci/builds/{build_number}",
        "web_url": f"{web}/builds/{build_number}#{job_id}",
        "log_url": f"https://api.buildkite.com/v2/organizations/acme/pipelines/ci/builds/{build_number}/jobs/{job_id}/log",
        "command": "pytest -v -s tests/",
        "soft_failed": soft_failed,
        "exit_status": (1 if failed else 0) if state in ("passed", "failed", "timed_out") else None,
        "artifact_paths": None,
        "agent": None,
        "created_at": _stamp(minute),
        "scheduled_at": _stamp(minute),
        "runnable_at": _stamp(minute),
        "started_at": _stamp(minute + 1) if state not in ("scheduled", "waiting") else None,
        "finished_at": _stamp(minute + 20)
        if state in ("passed", "failed", "timed_out", "canceled")
        else None,
        "retried": retried_in is not None,
        "retried_in_job_id": retried_in,
        "retries_count": retries_count,
        "retry_source": None,
        "retry_type": "manual" if retries_count else None,
        "parallel_group_index": parallel_group_index,
        "parallel_group_total": None if parallel_group_index is None else 2,
        "matrix": None,
    }


def attempts(
    build_number: int, step_key: str | None, states: Sequence[str], **fields: Any
) -> list[dict[str, Any]]:
    """One step's jobs: the first attempt, then each retry (the last one is current)."""
    ids = [str(uuid.uuid4()) for _ in states]
    return [
        script_job(
            build_number,
            step_key,
            state,
            job_id=ids[i],
            retried_in=ids[i + 1] if i + 1 < len(states) else None,
            retries_count=i or None,
            minute=i * 25,
            **fields,
        )
        for i, state in enumerate(states)
    ]


def waiter() -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "graphql_id": "V2FpdGVy", "type": "waiter"}


def block(label: str = "Run all tests") -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "graphql_id": "QmxvY2s",
        "type": "manual",
        "label": label,
        "state": "blocked",
        "web_url": None,
        "unblocked_by": None,
        "unblocked_at": None,
        "unblockable": True,
        "unblock_url": "https://api.buildkite.com/v2/organizations/acme/pipelines/ci/builds/1/jobs/x/unblock",
    }


def trigger(name: str = "Trigger AMD CI") -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "graphql_id": "VHJpZ2dlcg",
        "type": "trigger",
        "name": name,
        "state": "passed",
        "build_url": None,
        "web_url": None,
        "scheduled_at": None,
        "finished_at": None,
        "runnable_at": None,
        "started_at": None,
        "triggered_build": None,
    }


def build(
    number: int,
    jobs: list[dict[str, Any]] | None,
    *,
    branch: str = "main",
    commit: str | None = None,
    state: str | None = None,
    web: str = WEB,
) -> dict[str, Any]:
    """A build as the API lists it; its state follows its current (non-retried) jobs."""
    if state is None:
        current = [j for j in jobs or [] if j.get("type") == "script" and not j.get("retried")]
        failed = any(
            j["state"] in ("failed", "timed_out") and not j["soft_failed"] for j in current
        )
        state = "failed" if failed else "passed"
    body: dict[str, Any] = {
        "id": str(uuid.UUID(int=number)),
        "graphql_id": f"QnVpbGQ{number}",
        "url": f"https://api.buildkite.com/v2/organizations/acme/pipelines/ci/builds/{number}",
        "web_url": f"{web}/builds/{number}",
        "number": number,
        "state": state,
        "cancel_reason": None,
        "blocked": False,
        "message": f"Commit {number}",
        "commit": commit or f"{number:040x}",
        "branch": branch,
        "tag": None,
        "env": {},
        "source": "webhook",
        "creator": None,
        "created_at": _stamp(number * 30),
        "scheduled_at": _stamp(number * 30),
        "started_at": _stamp(number * 30 + 1),
        "finished_at": _stamp(number * 30 + 29),
        "meta_data": {},
        "pull_request": None,
        "rebuilt_from": None,
        "pipeline": {"id": "0190-pipeline", "slug": "ci", "name": "CI"},
    }
    if jobs is not None:
        body["jobs"] = jobs
    return body


# One letter per build, newest first: P passed, F failed, T timed out, R failed then passed
# on a retry in the same build, X failed on the first attempt and on its retry, S soft
# failed, C canceled, - the step did not run in that build.
_LETTERS = {
    "P": ["passed"],
    "F": ["failed"],
    "T": ["timed_out"],
    "R": ["failed", "passed"],
    "X": ["failed", "failed"],
    "C": ["canceled"],
}


def step_jobs(number: int, step_key: str | None, letter: str, **fields: Any) -> list[dict]:
    if letter == "-":
        return []
    if letter == "S":
        return [script_job(number, step_key, "failed", soft_failed=True, **fields)]
    return attempts(number, step_key, _LETTERS[letter], **fields)


def history(
    patterns: dict[str, str],
    *,
    newest: int = 1000,
    branch: str = "main",
    names: dict[str, str] | None = None,
    keyless: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Builds of ``branch`` newest first, one per letter; a step per pattern.

    ``keyless`` steps carry no ``step_key``, only their label as ``name`` (older pipelines).
    """
    length = max((len(p) for p in patterns.values()), default=0)
    builds = []
    for i in range(length):
        number = newest - i
        jobs: list[dict[str, Any]] = [waiter()]
        for key, pattern in patterns.items():
            letter = pattern[i] if i < len(pattern) else "-"
            label = (names or {}).get(key, key)
            jobs.extend(step_jobs(number, None if key in keyless else key, letter, name=label))
        builds.append(build(number, jobs, branch=branch))
    return builds
