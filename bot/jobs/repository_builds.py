"""The repository's own CI builds of a head, as a source of its own: which selected smoke
steps they ran or scheduled, and in what state. Pure: build objects in Buildkite's REST shape
(``GET …/builds?commit=``, newest first) in, one :class:`SeenStep` per step key out.

These are never prbot's results. prbot's own builds are left out here (their results come
through the job records): those whose id prbot's job store recorded, never those whose
meta-data names a dispatch (a PR's code can set meta-data on the build it runs in, to hide
its failed step from this reader or to pass a build off as prbot's); a step seen
here is shown as "in the repository's build #N", and prbot dispatches only the selected
steps no build of the head ran or scheduled, so one action never makes two builds of a step.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bot.core.sections import Section, Status
from bot.jobs.progress import safe_url
from bot.jobs.selection import job_device

# Buildkite job states of a step that ran, runs or will run without anyone's action: a second
# build of it would double-book its machine.
RAN_OR_SCHEDULED = frozenset(
    {
        "pending",
        "waiting",
        "waiting_failed",
        "unblocked",
        "unblocked_failed",
        "limiting",
        "limited",
        "scheduled",
        "assigned",
        "accepted",
        "reserved",
        "running",
        "passed",
        "failed",
        "canceling",
        "timing_out",
        "timed_out",
    }
)
# The step is in the build but nothing will run it: blocked behind a block step nobody
# unblocked, skipped, canceled before it started, broken, expired.
NOT_RUN = frozenset(
    {"blocked", "blocked_failed", "skipped", "not_run", "broken", "expired", "canceled"}
)
SOURCE = "repository"


@dataclass(frozen=True)
class SeenStep:
    step_key: str
    state: str  # the CI's own word
    build: int | None
    url: str
    ran: bool  # ran, runs or is scheduled: prbot sends no second build of it
    source: str = SOURCE  # repository (its Buildkite builds), check_run or status (GitHub's)
    context: str = ""  # the check run's name or the status's context that named the step

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def build_ids(builds: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids of the listed builds (to ask the job store which of them are prbot's)."""
    return [b["id"] for b in builds if isinstance(b, Mapping) and isinstance(b.get("id"), str)]


def steps_in_builds(
    builds: Sequence[Mapping[str, Any]], step_keys: Iterable[str], *, own_builds: Collection[str]
) -> dict[str, SeenStep]:
    """For each wanted step key, its newest job that ran or is scheduled in a build not
    prbot's (``own_builds``: the ids its job store recorded), else its newest job that will
    not run; keys no build has are left out."""
    wanted = set(step_keys)
    seen: dict[str, SeenStep] = {}
    for build in builds:
        if not isinstance(build, Mapping) or build.get("id") in own_builds:
            continue
        number = build.get("number") if isinstance(build.get("number"), int) else None
        for job in build.get("jobs") or []:
            if not isinstance(job, Mapping) or job.get("type") != "script":
                continue
            key = job.get("step_key")
            if key not in wanted or job.get("retried"):
                continue  # a retried job was replaced by a later one of the same step
            state = str(job.get("state") or "")
            ran = state in RAN_OR_SCHEDULED
            earlier = seen.get(key)  # type: ignore[arg-type]
            if earlier is not None and (earlier.ran or not ran):
                continue  # builds come newest first: keep the newest that counts
            url = str(job.get("web_url") or build.get("web_url") or "")
            seen[key] = SeenStep(str(key), state, number, url, ran)  # type: ignore[arg-type]
    return seen


def from_json(data: Mapping[str, Any]) -> dict[str, SeenStep]:
    """What a kept report's context holds back into SeenSteps (bad entries dropped)."""
    found = {}
    for key, value in (data or {}).items():
        if isinstance(value, Mapping) and isinstance(value.get("state"), str):
            build = value.get("build")
            found[str(key)] = SeenStep(
                str(key),
                value["state"],
                build if isinstance(build, int) else None,
                str(value.get("url") or ""),
                bool(value.get("ran")),
                str(value.get("source") or SOURCE),
                str(value.get("context") or ""),
            )
    return found


def annotate(
    section: Section,
    seen: Mapping[str, SeenStep],
    notes: Sequence[str],
    *,
    dispatching: bool,
) -> Section:
    """The jobs section with each smoke step's state in the repository's own builds beside
    prbot's own status, and the notes (an API that refused, a list cut at its bound). When
    prbot dispatches nothing here (advisory), nothing waits for an approval either, and the
    summary says so."""
    if not section.findings and not notes:
        return section
    findings = []
    for finding in section.findings:
        updated = dict(finding)
        step = seen.get(str(finding.get("step_key") or ""))
        if step is not None and finding.get("kind") == "gpu_smoke":
            # The CI's URL is the operator's CI's, but a link is still only a plain URL.
            updated["repository_build"] = {**step.to_json(), "url": safe_url(step.url)}
        if not dispatching and updated.get("status") == "awaiting_approval":
            updated["status"] = "selected"
        findings.append(updated)
    data = {**section.data, "repository_notes": list(notes)[:5], "advisory": not dispatching}
    status, summary = section.status, section.summary
    states = [f["repository_build"]["state"] for f in findings if f.get("repository_build")]
    if not dispatching and findings:
        smoke = sum(f.get("kind") == "gpu_smoke" for f in findings)
        counts: dict[str, int] = {}
        for state in states:
            counts[state] = counts.get(state, 0) + 1
        said = ", ".join(f"{n} {state.replace('_', ' ')}" for state, n in sorted(counts.items()))
        machines = ", ".join(dict.fromkeys(job_device(f) for f in findings))
        summary = f"{len(findings)} GPU job{'s' if len(findings) != 1 else ''} on {machines}"
        if states:
            summary += f"; the repository's own builds of this head: {said}"
        unseen = smoke - len(states)
        if unseen > 0:
            summary += f"; {unseen} smoke step{'s' if unseen != 1 else ''} in no build yet"
        summary += "; advisory: prbot dispatches nothing here"
        failing = any(s in ("failed", "timed_out") for s in states)
        status = Status.WARN if failing else Status.PASS
    return Section(section.check, status, summary[:400], findings, data)
