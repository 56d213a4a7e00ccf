"""A base branch's Buildkite builds read as steps: each step's attempts per build, bounded.

Builds come in the REST shape of ``GET …/builds?branch=<base>&include_retried_jobs=true``
(newest first): a retried job stays in ``jobs`` with ``retried_in_job_id`` naming its retry,
so a step's attempts in one build form a chain, the last one deciding how the build saw it.
Only ``script`` jobs are steps (``waiter``, ``manual`` block and ``trigger`` jobs are not);
a job without ``step_key`` is named by the key vLLM's pipeline generator derives from its
label (:func:`bot.jobs.buildkite_steps.generated_key`); a parallel job's index makes
each of its jobs a step of its own. Builds of other branches, entries that are not builds,
and everything past the bound are dropped, and said.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.jobs.buildkite_steps import generated_key

FAILED_STATES = ("failed", "timed_out")
PASSED_STATES = ("passed",)
RUNNING_STATES = (
    "pending",
    "waiting",
    "blocked",
    "limiting",
    "limited",
    "scheduled",
    "assigned",
    "accepted",
    "reserved",
    "running",
    "canceling",
    "timing_out",
)
# Builds a history read ever takes, however many the caller holds; and jobs per build.
MAX_HISTORY_BUILDS = 1000
DEFAULT_HISTORY_BUILDS = 50
MAX_JOBS_PER_BUILD = 5000


@dataclass(frozen=True)
class Attempt:
    """One job of a step in one build: an attempt, possibly retried by a later one."""

    job_id: str
    state: str
    soft_failed: bool
    retried_in: str | None
    web_url: str
    exit_status: int | None

    @property
    def failed(self) -> bool:
        return self.state in FAILED_STATES and not self.soft_failed

    @property
    def passed(self) -> bool:
        return self.state in PASSED_STATES or (self.soft_failed and self.state in FAILED_STATES)


@dataclass(frozen=True)
class StepRun:
    """A step's attempts in one build, the last one deciding how the build saw it."""

    identity: str
    step_key: str | None
    name: str
    attempts: tuple[Attempt, ...]
    build_number: int | None
    build_url: str
    commit: str

    @property
    def final(self) -> Attempt:
        return self.attempts[-1]

    @property
    def failed(self) -> bool:
        """Failed for good: the last attempt failed (a retry that passed is a pass)."""
        return self.final.failed

    @property
    def completed(self) -> bool:
        return self.final.failed or self.final.passed

    @property
    def failed_then_passed(self) -> bool:
        return self.final.passed and any(a.failed for a in self.attempts[:-1])

    @property
    def failures(self) -> int:
        return sum(1 for a in self.attempts if a.failed)

    @property
    def job_url(self) -> str:
        return self.final.web_url


@dataclass(frozen=True)
class History:
    """The base branch's builds as read: newest first, bounded, other branches dropped."""

    branch: str
    builds: tuple[Mapping[str, Any], ...]
    runs: Mapping[str, tuple[StepRun, ...]]  # identity -> its runs, newest first
    notes: tuple[str, ...] = ()
    complete: bool = True  # False: the read stopped early (a timeout, an error)
    stopped: str | None = None  # why it stopped


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def int_of(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def step_identity(job: Mapping[str, Any]) -> str | None:
    """What names a step across builds: its key, else the key vLLM's generator derives from
    its label; a parallel job's index makes each of its jobs a step of its own."""
    key = text_of(job.get("step_key")) or generated_key(text_of(job.get("name")))
    if not key:
        return None
    index = int_of(job.get("parallel_group_index"))
    return f"{key}#{index}" if index is not None else key


def _attempt(job: Mapping[str, Any]) -> Attempt:
    return Attempt(
        job_id=text_of(job.get("id")),
        state=text_of(job.get("state")),
        soft_failed=job.get("soft_failed") is True,
        retried_in=text_of(job.get("retried_in_job_id")) or None,
        web_url=text_of(job.get("web_url")),
        exit_status=int_of(job.get("exit_status")),
    )


def _ordered(attempts: list[Attempt]) -> tuple[Attempt, ...]:
    """Attempts in retry order: each ``retried_in_job_id`` points at the next one."""
    by_id = {a.job_id: a for a in attempts if a.job_id}
    pointed = {a.retried_in for a in attempts if a.retried_in}
    firsts = [a for a in attempts if a.job_id not in pointed] or attempts[:1]
    chain: list[Attempt] = []
    seen: set[str] = set()
    current: Attempt | None = firsts[0]
    while current is not None and current.job_id not in seen and len(chain) < len(attempts):
        chain.append(current)
        seen.add(current.job_id)
        current = by_id.get(current.retried_in or "")
    # Attempts the chain did not reach (broken links): kept, before the chain's end.
    rest = [a for a in attempts if a.job_id not in seen]
    return tuple(rest + chain) if rest else tuple(chain)


def step_runs(build: Mapping[str, Any]) -> tuple[dict[str, StepRun], list[str]]:
    """A build's steps by identity (script jobs only), and what could not be read."""
    jobs = build.get("jobs")
    problems: list[str] = []
    if not isinstance(jobs, list):
        return {}, problems
    if len(jobs) > MAX_JOBS_PER_BUILD:
        problems.append(f"{len(jobs)} jobs; the first {MAX_JOBS_PER_BUILD} were read")
        jobs = jobs[:MAX_JOBS_PER_BUILD]
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    nameless = 0
    for job in jobs:
        if not isinstance(job, dict) or job.get("type") != "script":
            continue  # waiter, manual (block) and trigger jobs are not steps
        identity = step_identity(job)
        if identity is None:
            nameless += 1
            continue
        grouped.setdefault(identity, []).append(job)
    if nameless:
        problems.append(f"{nameless} job(s) with neither step_key nor name")
    number = int_of(build.get("number"))
    runs = {}
    for identity, group in grouped.items():
        first = group[0]
        runs[identity] = StepRun(
            identity=identity,
            step_key=text_of(first.get("step_key")) or None,
            name=text_of(first.get("name")) or identity,
            attempts=_ordered([_attempt(job) for job in group]),
            build_number=number,
            build_url=text_of(build.get("web_url")),
            commit=text_of(build.get("commit")),
        )
    return runs, problems


def read_history(
    builds: Iterable[object],
    branch: str,
    *,
    limit: int = DEFAULT_HISTORY_BUILDS,
    complete: bool = True,
    stopped: str | None = None,
    exclude_commit: str | None = None,
) -> History:
    """The base branch's builds from a listing, newest first, at most ``limit`` of them."""
    limit = max(1, min(limit, MAX_HISTORY_BUILDS))
    kept: dict[int, Mapping[str, Any]] = {}
    other_branch = without_number = without_jobs = not_builds = 0
    seen = 0
    for build in builds:
        seen += 1
        if not isinstance(build, dict):
            not_builds += 1
            continue
        if build.get("branch") != branch:
            other_branch += 1
            continue
        number = int_of(build.get("number"))
        if number is None:
            without_number += 1
            continue
        if exclude_commit and build.get("commit") == exclude_commit:
            continue
        if not isinstance(build.get("jobs"), list):
            without_jobs += 1
            continue
        kept.setdefault(number, build)
        if len(kept) >= limit:
            break
    # Newest first by number, whatever order the listing had.
    ordered = tuple(kept[n] for n in sorted(kept, reverse=True))
    runs: dict[str, list[StepRun]] = {}
    notes = []
    for build in ordered:
        found, _ = step_runs(build)
        for identity, run in found.items():
            runs.setdefault(identity, []).append(run)
    if other_branch:
        notes.append(f"{other_branch} build(s) of other branches ignored")
    if without_jobs:
        notes.append(f"{without_jobs} build(s) of {branch} listed without jobs")
    if without_number or not_builds:
        notes.append(f"{without_number + not_builds} entries that are not builds ignored")
    if len(kept) >= limit:
        notes.append(f"the newest {limit} builds of {branch} were read")
    return History(
        branch,
        ordered,
        {k: tuple(v) for k, v in runs.items()},
        tuple(notes),
        complete,
        stopped,
    )
