"""Is a failed CI job the PR's own failure? Sorted as Dr. CI sorts PyTorch's, from data alone.

Inputs are Buildkite's REST shapes: the head's build (``jobs`` included) and the base
branch's builds as ``GET …/builds?branch=<base>&include_retried_jobs=true`` lists them,
newest first. Each failed or timed-out step of the head becomes one :class:`Classified`:

- ``flaky``: it failed, then passed on a retry of the same commit; or, on the base branch,
  it failed alone between passes (green, red, green) or failed and then passed on the same
  commit at least ``flaky_failures`` times in the newest ``flaky_window`` runs;
- ``broken_trunk``: it failed in the merge base's own build, or in the base branch's latest
  ``broken_trunk_builds`` completed runs at or before the merge base (a rebase may fix it
  when main passed since), or in all of the latest ones after it (broken by something the
  PR does not carry: a dependency, a model on the hub, the machines);
- ``new``: neither, with enough history to say so (``min_base_runs`` completed runs on the
  base branch): the PR's own failure. ``confirmed`` says whether it repeated on a retry;
- ``unknown``, with the reason, whenever the data cannot say (no base builds, the step never
  ran on the base branch, too few runs, main's latest build failed it once, a history read
  that stopped half-way): never a guess.

Jobs of type ``waiter``, ``manual`` (block) and ``trigger`` are not steps, and a soft-failed
job is not a failure. A job without ``step_key`` is matched by the key vLLM's pipeline
generator derives from its label (:func:`bot.jobs.buildkite_steps.generated_key`).
Every walk is bounded: builds read, jobs per build, retry chains.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.jobs.ci_history import (
    DEFAULT_HISTORY_BUILDS,
    FAILED_STATES,
    RUNNING_STATES,
    History,
    StepRun,
    int_of,
    step_runs,
    text_of,
)

NEW, FLAKY, BROKEN_TRUNK, UNKNOWN = "new", "flaky", "broken_trunk", "unknown"
CLASSIFICATIONS = (NEW, FLAKY, BROKEN_TRUNK, UNKNOWN)
# The order a reader wants them in: the PR's own failures first.
ORDER = {NEW: 0, UNKNOWN: 1, BROKEN_TRUNK: 2, FLAKY: 3}

MAX_EVIDENCE = 5


@dataclass(frozen=True)
class SignalRules:
    """The thresholds (``checks.jobs.ci_signal`` in the rules)."""

    history_builds: int = DEFAULT_HISTORY_BUILDS
    broken_trunk_builds: int = 2
    flaky_window: int = 30
    flaky_failures: int = 2
    min_base_runs: int = 3


@dataclass(frozen=True)
class Classified:
    step_key: str | None
    name: str
    state: str
    classification: str
    reason: str
    evidence: tuple[dict[str, Any], ...] = ()
    base_builds_seen: int = 0
    confirmed: bool = False  # new: the failure repeated on a retry of the same commit
    job_url: str = ""
    base_job_url: str = ""
    job_id: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)
    identity: str = ""  # the step as matched across builds (step_key, or the derived key)
    running: bool = False  # failed, and a retry of the same commit is under way

    def to_json(self) -> dict[str, Any]:
        return {
            "step_key": self.step_key,
            "name": self.name,
            "state": self.state,
            "classification": self.classification,
            "reason": self.reason,
            "evidence": [dict(e) for e in self.evidence],
            "base_builds_seen": self.base_builds_seen,
            "confirmed": self.confirmed,
            "job_url": self.job_url,
            "base_job_url": self.base_job_url,
            "job_id": self.job_id,
            "counts": dict(self.counts),
        }


def _evidence(run: StepRun, why: str) -> dict[str, Any]:
    return {
        "build_number": run.build_number,
        "build_url": run.build_url,
        "job_url": run.job_url,
        "commit": run.commit,
        "state": run.final.state,
        "why": why,
    }


def _flakes(runs: Sequence[StepRun]) -> list[tuple[StepRun, str]]:
    """Failures on the base branch that did not stay: passed on a retry of the same commit
    (in the build, or in another build of that commit), or failed alone between passes."""
    found: list[tuple[StepRun, str]] = []
    outcome_by_commit: dict[str, set[bool]] = {}
    for run in runs:
        if run.commit:
            outcome_by_commit.setdefault(run.commit, set()).add(run.failed)
    for i, run in enumerate(runs):
        if run.failed_then_passed:
            found.append((run, "failed, then passed on a retry in the same build"))
            continue
        if not run.failed:
            continue
        if run.commit and outcome_by_commit.get(run.commit) == {True, False}:
            found.append((run, "failed; another build of the same commit passed"))
            continue
        newer = runs[i - 1] if i > 0 else None
        older = runs[i + 1] if i + 1 < len(runs) else None
        if newer is not None and older is not None and not newer.failed and not older.failed:
            found.append((run, "failed alone between passes"))
    return found


def classify_step(
    head: StepRun,
    history: History,
    rules: SignalRules,
    *,
    merge_base: str | None = None,
) -> Classified:
    """One failing (or failed-then-retried) step of the head, against the base branch."""
    base = dict(
        step_key=head.step_key,
        name=head.name,
        state=head.final.state,
        job_url=head.job_url,
        job_id=head.final.job_id,
        identity=head.identity,
    )
    head_failures = head.failures
    head_counts = {"head_attempts": len(head.attempts), "head_failures": head_failures}
    if head.failed_then_passed:
        return Classified(
            **base,
            classification=FLAKY,
            reason=f"failed {head_failures} time(s), then passed on a retry of the same commit",
            evidence=tuple(
                {
                    "build_number": head.build_number,
                    "build_url": head.build_url,
                    "job_url": a.web_url,
                    "commit": head.commit,
                    "state": a.state,
                    "why": "attempt on the head commit",
                }
                for a in head.attempts[-MAX_EVIDENCE:]
            ),
            counts=head_counts,
        )
    if head.final.state in RUNNING_STATES:
        return Classified(
            **base,
            classification=UNKNOWN,
            reason="failed; its retry on the same commit has not finished",
            counts=head_counts,
            running=True,
        )
    confirmed = head_failures >= 2
    window = [r for r in history.runs.get(head.identity, ()) if r.completed]
    seen = len(window)
    if not history.builds:
        why = f"no builds of {history.branch} to compare with"
        if not history.complete:
            why += f" ({history.stopped or 'the history read stopped'})"
        return Classified(
            **base, classification=UNKNOWN, reason=why, confirmed=confirmed, counts=head_counts
        )
    base_url = window[0].job_url if window else ""
    common = dict(base_builds_seen=seen, confirmed=confirmed, base_job_url=base_url)

    # broken trunk: the latest completed runs at or before the merge base all failed.
    boundary = None
    merge_base_note = ""
    if merge_base:
        numbers = [r.build_number for r in window if r.commit == merge_base and r.build_number]
        at_merge_base = [
            int_of(b.get("number")) for b in history.builds if b.get("commit") == merge_base
        ]
        candidates = [n for n in numbers + at_merge_base if n is not None]
        if candidates:
            boundary = max(candidates)
        else:
            merge_base_note = (
                f"; the merge base {merge_base[:12]} has no build among those read, "
                f"so the latest builds of {history.branch} stand in"
            )
    before = [r for r in window if boundary is None or (r.build_number or 0) <= boundary]
    latest = before[: rules.broken_trunk_builds]
    newest = window[: rules.broken_trunk_builds]
    if (
        boundary is not None
        and len(newest) >= rules.broken_trunk_builds
        and all(r.failed for r in newest)
        and not (len(latest) >= rules.broken_trunk_builds and all(r.failed for r in latest))
    ):
        # Broken after the merge base, so by nothing the PR carries: a dependency, a model
        # on the hub, the machines. The PR's head fails for the same outside reason.
        return Classified(
            **base,
            classification=BROKEN_TRUNK,
            reason=(
                f"failing in the latest {len(newest)} completed build(s) of {history.branch}, "
                "all after the merge base: broken by something the PR does not carry"
            ),
            evidence=tuple(_evidence(r, "failed on the base branch") for r in newest),
            counts={"base_failed": sum(r.failed for r in window), "base_runs": seen, **head_counts},
            **{**common, "base_job_url": newest[0].job_url},
        )
    at_base = (
        before[0] if before and boundary is not None and before[0].commit == merge_base else None
    )
    streak = len(latest) >= rules.broken_trunk_builds and all(r.failed for r in latest)
    if streak or (at_base is not None and at_base.failed):
        latest = latest if streak else [at_base]
        fixed = next((r for r in window if r not in before and not r.failed), None)
        if streak:
            reason = (
                f"failed in the latest {len(latest)} completed build(s) of {history.branch}"
                + (" at or before the merge base" if boundary is not None else "")
                + merge_base_note
            )
        else:
            reason = (
                "failed in the build of the merge base itself "
                f"({history.branch} #{latest[0].build_number})"
            )
        evidence = [_evidence(r, "failed on the base branch") for r in latest]
        if fixed is not None:
            reason += f"; passed since in #{fixed.build_number}, so a rebase may fix it"
            evidence.append(_evidence(fixed, "passed after the merge base"))
        return Classified(
            **base,
            classification=BROKEN_TRUNK,
            reason=reason,
            evidence=tuple(evidence[: MAX_EVIDENCE + 1]),
            counts={"base_failed": sum(r.failed for r in window), "base_runs": seen, **head_counts},
            **{**common, "base_job_url": latest[0].job_url},
        )

    recent = window[: rules.flaky_window]
    last = before[0] if before else None
    flakes = _flakes(recent)
    counts = {
        "base_runs": len(recent),
        "base_failed": sum(r.failed for r in recent),
        "base_flakes": len(flakes),
        **head_counts,
    }
    if len(flakes) >= rules.flaky_failures:
        return Classified(
            **base,
            classification=FLAKY,
            reason=(
                f"flips between fail and pass on {history.branch}: {len(flakes)} failure(s) "
                f"that did not stay in the last {len(recent)} completed run(s)"
            ),
            evidence=tuple(_evidence(r, why) for r, why in flakes[:MAX_EVIDENCE]),
            counts=counts,
            **{**common, "base_job_url": flakes[0][0].job_url},
        )
    if last is not None and last.failed:
        return Classified(
            **base,
            classification=UNKNOWN,
            reason=(
                f"failed in the latest completed build of {history.branch} too "
                f"(#{last.build_number}); one failure does not tell a broken "
                f"{history.branch} from a flaky step"
            ),
            evidence=(_evidence(last, "failed on the base branch"),),
            counts=counts,
            **{**common, "base_job_url": last.job_url},
        )
    if not history.complete:
        return Classified(
            **base,
            classification=UNKNOWN,
            reason=(
                f"the history of {history.branch} was only partly read "
                f"({history.stopped or 'the read stopped'}; {len(history.builds)} build(s))"
            ),
            counts=counts,
            **common,
        )
    if seen == 0:
        return Classified(
            **base,
            classification=UNKNOWN,
            reason=(
                f"the step did not run in the {len(history.builds)} build(s) of "
                f"{history.branch} read"
            ),
            counts=counts,
            **common,
        )
    if seen < rules.min_base_runs:
        return Classified(
            **base,
            classification=UNKNOWN,
            reason=(
                f"{seen} completed run(s) of the step on {history.branch}; "
                f"{rules.min_base_runs} are needed to tell"
            ),
            evidence=tuple(_evidence(r, "run on the base branch") for r in window),
            counts=counts,
            **common,
        )
    passed = len(recent) - counts["base_failed"]
    reason = (
        f"passed in {passed} of the last {len(recent)} completed run(s) on {history.branch}"
        + merge_base_note
    )
    reason += (
        f"; failed again on a retry of the same commit ({head_failures} attempts)"
        if confirmed
        else "; not retried on this commit"
    )
    last_pass = next((r for r in recent if not r.failed), recent[0])
    return Classified(
        **base,
        classification=NEW,
        reason=reason,
        evidence=(_evidence(last_pass, f"passed on {history.branch}"),),
        counts=counts,
        **{**common, "base_job_url": last_pass.job_url},
    )


def failing_steps(build: Mapping[str, Any]) -> tuple[list[StepRun], list[str]]:
    """The head build's steps that failed (a retry that passed included), and problems."""
    runs, problems = step_runs(build)
    return [r for r in runs.values() if any(a.failed for a in r.attempts)], problems


def classify_build(
    head_build: Mapping[str, Any],
    history: History,
    rules: SignalRules | None = None,
    *,
    merge_base: str | None = None,
) -> list[Classified]:
    """Every failed step of ``head_build``, classified; new failures first."""
    rules = rules or SignalRules()
    if not isinstance(head_build, dict) or not isinstance(head_build.get("jobs"), list):
        return [_whole_build(head_build, "the build carries no jobs to classify")]
    if not head_build["jobs"]:
        return [_whole_build(head_build, "the build has no jobs")]
    failing, problems = failing_steps(head_build)
    results = [classify_step(run, history, rules, merge_base=merge_base) for run in failing]
    if not results and problems and _build_failed(head_build):
        results.append(_whole_build(head_build, "; ".join(problems)))
    results.sort(key=lambda c: (ORDER[c.classification], c.name))
    return results


def _build_failed(build: Mapping[str, Any]) -> bool:
    return build.get("state") in FAILED_STATES or build.get("state") == "failing"


def _whole_build(build: object, why: str) -> Classified:
    data = build if isinstance(build, dict) else {}
    return Classified(
        step_key=None,
        name=f"build #{int_of(data.get('number')) or '?'}",
        state=text_of(data.get("state")) or "unknown",
        classification=UNKNOWN,
        reason=why,
        job_url=text_of(data.get("web_url")),
    )


def counts_by_classification(results: Iterable[Classified]) -> dict[str, int]:
    counts = dict.fromkeys(CLASSIFICATIONS, 0)
    for result in results:
        counts[result.classification] += 1
    return counts
