"""A GPU job's record as data: which job of which head, what was selected, how far it got.

Plain values, shared by the dispatch planner (pure), the redrawn section and the store
(``bot.store.jobs``, which reads and writes them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

UNDISPATCHED = ("selected", "awaiting_approval")
# The build id a dispatch holds while the engine has not named its build yet (GitHub Actions
# without run details): the run is bound when the engine lists it under that key.
PENDING_BUILD_PREFIX = "dispatch:"
ACTIVE = ("queued", "running")
FINISHED = ("passed", "failed", "timed_out", "canceled")


@dataclass(frozen=True)
class JobKey:
    """What a record is about: one job of one PR head, on one side of a comparison."""

    repo: str
    number: int
    head_sha: str
    name: str
    side: str = "head"


@dataclass(frozen=True)
class JobSpec:
    """A selected job as the record keeps it (everything but its progress)."""

    key: JobKey
    commit_sha: str
    kind: str
    engine: str
    hardware: str
    step_key: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)  # backends, config, reason, runs

    def row(self) -> dict[str, Any]:
        return {
            "repo": self.key.repo,
            "number": self.key.number,
            "head_sha": self.key.head_sha,
            "name": self.key.name,
            "side": self.key.side,
            "commit_sha": self.commit_sha,
            "kind": self.kind,
            "engine": self.engine,
            "hardware": self.hardware,
            "step_key": self.step_key,
            "spec": self.spec,
        }


@dataclass(frozen=True)
class JobRecord:
    id: int
    key: JobKey
    commit_sha: str
    kind: str
    engine: str
    hardware: str
    step_key: str | None
    spec: dict[str, Any]
    state: str
    attempt: int
    dispatch_key: str | None
    build_id: str | None
    build_number: int | None
    build_url: str | None
    job_url: str | None
    results: list[dict[str, float]] | None
    error: str | None
    updated_at: datetime
    # The classification of a failed job (``bot.jobs.ci_signal.Classified.to_json``).
    signal: dict[str, Any] | None = None

    @property
    def awaiting_build(self) -> bool:
        """Dispatched, but not bound to a build yet (none recorded, or one still pending)."""
        return self.dispatch_key is not None and (
            self.build_id is None or self.build_id == pending_build_id(self.dispatch_key)
        )

    @property
    def claimed_without_build(self) -> bool:
        """Claimed for a dispatch whose build was never recorded (a crash, or in flight)."""
        return self.state == "queued" and self.dispatch_key is not None and self.build_id is None


def pending_build_id(dispatch_key: str) -> str:
    """The stand-in build id of a dispatch whose build the engine has not named yet."""
    return f"{PENDING_BUILD_PREFIX}{dispatch_key}"
