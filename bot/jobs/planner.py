"""What to dispatch for one PR head, decided from data alone (no engine, no database).

Inputs: the jobs the check selected, whether the head may run GPU jobs (a trusted author,
or a maintainer's approval of *this* SHA), the records of what was dispatched before, and
why we are asked (an event, ``/recheck``, ``/recheck all``, an approval). Output: which jobs
wait for approval, which builds to create (one build for the smoke steps of a head, one per
benchmark side), which claimed dispatches to resume, and which base runs are reused.

The rules, in the order they apply:

- an untrusted, unapproved head dispatches nothing, whatever asks (``/recheck`` included);
- a job never dispatched is dispatched; one queued or running is left alone;
- a finished job is dispatched again only by ``/recheck`` (failed, timed out or canceled
  ones), ``/recheck all`` (passed ones too) or a new approval (failed ones);
- a benchmark is one job (``prbot bench run``: base and head alternately on one GPU); no
  base run from another build is reused (``reusable_base`` is accepted and ignored).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from bot.jobs.compare import DEFAULT_ROUNDS
from bot.jobs.records import ACTIVE, JobKey, JobRecord, JobSpec
from bot.jobs.selection import BENCHMARK, GPU_SMOKE

Mode = Literal["event", "recheck", "recheck_all", "approval"]
RETRYABLE = ("failed", "timed_out", "canceled")


def _count(value: object) -> int:
    """A stored shard count; 1 for anything else (reports stored before it was kept)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1


@dataclass(frozen=True)
class WantedJob:
    """A job finding of the report's jobs section, as the planner needs it."""

    name: str
    kind: str
    hardware: str
    engine: str
    reason: str
    step_key: str | None = None
    backends: tuple[str, ...] = ()
    config: str | None = None
    # A benchmark: "base" (each backend at the merge base and at head) or "backends" (new
    # backends against ``against``, the incumbents, on the same head).
    compare: str = "base"
    against: tuple[str, ...] = ()
    parallelism: int = 1  # a smoke step's shards (its ``parallelism``)

    @classmethod
    def from_finding(cls, finding: Mapping[str, object]) -> WantedJob:
        backends = finding.get("backends") or ()
        return cls(
            name=str(finding["name"]),
            kind=str(finding.get("kind") or GPU_SMOKE),
            hardware=str(finding.get("hardware") or ""),
            engine=str(finding.get("engine") or "buildkite"),
            reason=str(finding.get("reason") or ""),
            step_key=str(finding["step_key"]) if finding.get("step_key") else None,
            backends=tuple(str(b) for b in backends),  # type: ignore[union-attr]
            config=str(finding["config"]) if finding.get("config") else None,
            compare="backends" if finding.get("compare") == "backends" else "base",
            against=tuple(str(b) for b in finding.get("against") or ()),  # type: ignore[union-attr]
            parallelism=_count(finding.get("parallelism")),
        )


@dataclass(frozen=True)
class Head:
    repo: str
    number: int
    head_sha: str
    base_sha: str  # the merge base: what a benchmark's base side runs on
    trusted: bool
    approvers: tuple[str, ...] = ()
    benchmark_runs: int = DEFAULT_ROUNDS

    @property
    def may_dispatch(self) -> bool:
        return self.trusted or bool(self.approvers)


@dataclass(frozen=True)
class Dispatch:
    """One build to create: its jobs (each at the attempt it claims), commit and env."""

    engine: str
    side: str
    commit_sha: str
    jobs: tuple[tuple[JobSpec, int], ...]
    env: Mapping[str, str]
    dispatch_key: str

    @property
    def step_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(spec.step_key for spec, _ in self.jobs if spec.step_key))


@dataclass
class Plan:
    awaiting: list[JobSpec] = field(default_factory=list)
    selected: list[JobSpec] = field(default_factory=list)  # recorded, left for later
    dispatches: list[Dispatch] = field(default_factory=list)
    resume: list[str] = field(default_factory=list)  # dispatch keys claimed, build unknown
    reused_base: list[str] = field(default_factory=list)  # job names
    problems: list[str] = field(default_factory=list)

    @property
    def creates(self) -> int:
        return len(self.dispatches)


def job_spec(job: WantedJob, head: Head, side: str) -> JobSpec:
    commit = head.head_sha if side == "head" else head.base_sha
    spec: dict[str, object] = {"reason": job.reason, "backends": list(job.backends)}
    if job.kind == BENCHMARK:
        spec.update(
            config=job.config,
            runs=head.benchmark_runs,
            compare=job.compare,
            against=list(job.against),
            base_sha=head.base_sha,
        )
    return JobSpec(
        JobKey(head.repo, head.number, head.head_sha, job.name, side),
        commit,
        job.kind,
        job.engine,
        job.hardware,
        job.step_key,
        spec,
    )


def dispatch_key(head: Head, side: str, jobs: Sequence[tuple[JobSpec, int]], secret: bytes) -> str:
    """Unique per claim (the attempts are in it), short enough for the engine's meta-data.

    Keyed with ``secret`` (prbot's own, never a PR's to see), so nobody can name a key before
    prbot shows it; the same for two workers planning the same claim, so they build once.
    """
    if not secret:
        raise ValueError("a dispatch key needs prbot's secret")
    items = sorted(f"{spec.key.name}\0{attempt}" for spec, attempt in jobs)
    text = "\n".join([head.repo, str(head.number), head.head_sha, side, *items])
    return "prbot-" + hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()[:32]


def _next_attempt(record: JobRecord | None, mode: Mode) -> int | None:
    """The attempt to claim for this job, or None to leave it as it is."""
    if record is None or record.attempt == 0:
        return 1
    if record.state in ACTIVE:
        return None
    if record.state in RETRYABLE and mode in ("recheck", "recheck_all", "approval"):
        return record.attempt + 1
    if record.state == "passed" and mode == "recheck_all":
        return record.attempt + 1
    return None


def benchmark_env(job: WantedJob, runs: int, base_sha: str = "") -> dict[str, str]:
    """What the one benchmark job needs: both commits' sides run in it (``prbot bench run``),
    ``PRBOT_BENCHMARK_RUNS`` ABBA rounds; ``backends`` compares against the incumbents."""
    env = {"PRBOT_BENCHMARK_RUNS": str(runs), "PRBOT_BENCHMARK_COMPARE": job.compare}
    if job.compare == "base" and base_sha:
        env["PRBOT_BENCHMARK_BASE_COMMIT"] = base_sha
    if job.against:
        env["PRBOT_BENCHMARK_AGAINST"] = ",".join(job.against)
    if job.config:
        env["PRBOT_BENCHMARK_CONFIG"] = job.config
    if job.backends:
        env["PRBOT_BENCHMARK_BACKENDS"] = ",".join(job.backends)
    return env


def plan(
    jobs: Sequence[WantedJob],
    head: Head,
    records: Mapping[tuple[str, str], JobRecord],
    *,
    mode: Mode = "event",
    reusable_base: frozenset[str] = frozenset(),
    key_secret: bytes,
) -> Plan:
    """The dispatch plan for one head; ``records`` by (job name, side); dispatch keys keyed
    with ``key_secret``."""
    out = Plan()
    if not head.may_dispatch:
        for job in jobs:
            record = records.get((job.name, "head"))
            if record is None or record.attempt == 0:
                out.awaiting.append(job_spec(job, head, "head"))
        return out
    if not head.trusted and mode in ("recheck", "recheck_all"):
        mode = "event"  # an approved head's author re-runs nothing; a new approval does
    for record in records.values():
        if record.claimed_without_build and record.dispatch_key not in out.resume:
            out.resume.append(record.dispatch_key)  # type: ignore[arg-type]
    smoke: dict[str, list[tuple[JobSpec, int]]] = {}
    for job in jobs:
        if not job.step_key:
            out.problems.append(f"{job.name}: no step key in the rules, so nothing to run")
            continue
        if job.kind == BENCHMARK and job.compare == "backends" and not job.against:
            out.problems.append(f"{job.name}: a new backend with no incumbent to run against")
            continue
        # One job per benchmark: base and head run in it, alternately on one GPU, so a
        # base run made elsewhere (another build, an older base run) is never reused.
        for side in ("head",):
            record = records.get((job.name, side))
            attempt = _next_attempt(record, mode)
            if attempt is None:
                continue
            spec = job_spec(job, head, side)
            if job.kind == GPU_SMOKE:
                smoke.setdefault(job.engine, []).append((spec, attempt))
                continue
            claimed = ((spec, attempt),)
            out.dispatches.append(
                Dispatch(
                    job.engine,
                    side,
                    spec.commit_sha,
                    claimed,
                    benchmark_env(job, head.benchmark_runs, head.base_sha),
                    dispatch_key(head, side, claimed, key_secret),
                )
            )
    for engine, claimed in smoke.items():
        out.dispatches.insert(
            0,
            Dispatch(
                engine,
                "head",
                head.head_sha,
                tuple(claimed),
                {},
                dispatch_key(head, "head", claimed, key_secret),
            ),
        )
    return out
