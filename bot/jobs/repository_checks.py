"""The repository's own CI as GitHub shows it: other apps' check runs and commit statuses of
a head, read as the states of the selected smoke steps they name. Pure: GitHub's REST shapes
in (``GET …/commits/{sha}/check-runs``' ``check_runs``, ``GET …/commits/{sha}/status``'
``statuses``), one :class:`SeenStep` per step key out.

A check run or status names a step when its name (a check run's) or context (a status's) is
one of the rules' templates filled in for that step (``checks.jobs.repository_checks.names``):
``{key}`` the step key, ``{label}`` its label, ``{slug}`` the label lower-cased with each run
of other characters one ``-``, ``{slug_words}`` the same with ``+``, ``/`` and ``.`` written as
words first (``plus``, ``slash``, ``dot``). A name followed by ``-<n>`` is one shard of a
step only when that step has ``parallelism`` (n at most its job count): else ``<key>-2`` may
be another step's own name, and reading it as a shard would give this step that one's state.
vLLM's Buildkite posts one commit status per job, ``buildkite/ci/pr/<key or label slug>``,
beside ``buildkite/ci/pr`` for the whole build (the
spellings public tools that replay vLLM's statuses match: the key, the label slug either
way, a numeric shard suffix). prbot's own check run is never counted, nor by default any
other: a check run's name is its app's to choose, and CI apps take it from the config in the
PR's own tree (a fork's workflow names its GitHub Actions jobs), so a PR could name one after
a step and hide the step. ``checks.jobs.repository_checks.check_run_apps`` lists the apps
whose check runs count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.jobs.repository_builds import SeenStep

CHECK_RUN, STATUS = "check_run", "status"
# Its check runs are jobs of workflows a PR can add or edit: never the repository's CI unless
# the rules name it.
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_SHARD = re.compile(r"^(.+)-(\d{1,4})$")
_WORDS = (("+", " plus "), ("/", " slash "), (".", " dot "))
# GitHub check run (status, conclusion) -> the word the jobs section draws, and whether the
# step ran, runs or will run (prbot sends no second build of it).
_RUNNING = {"queued": "scheduled", "requested": "scheduled", "waiting": "waiting",
            "pending": "scheduled", "in_progress": "running"}  # fmt: skip
_CONCLUDED = {
    "success": ("passed", True),
    "neutral": ("passed", True),
    "failure": ("failed", True),
    "timed_out": ("timed_out", True),
    "cancelled": ("canceled", False),
    "skipped": ("skipped", False),
    "stale": ("expired", False),
    "action_required": ("blocked", False),
    "startup_failure": ("broken", False),
}
# A commit status: pending covers scheduled and running alike; error is a job that ran and
# could not finish (an agent lost), which GitHub shows as failed.
_STATUS = {"pending": ("pending", True), "success": ("passed", True),
           "failure": ("failed", True), "error": ("failed", True)}  # fmt: skip


# Of the names of one step that ran (its shards, or a check run and a status), the worst
# speaks for it: one shard failing fails the step, one still going keeps it going, whichever
# posted last (the newest alone made a passing shard hide a failed one).
_RANK = {"failed": 0, "timed_out": 0, "passed": 2}


@dataclass(frozen=True)
class StepName:
    key: str
    label: str
    parallelism: int = 1  # its shards: names with ``-<n>`` count only for a sharded step


def label_slug(label: str) -> str:
    """A step label as a Buildkite status context spells it: ``(B200) V1 Attention`` ->
    ``b200-v1-attention``."""
    return _NOT_ALNUM.sub("-", label.lower()).strip("-")


def label_slug_words(label: str) -> str:
    """The slug with ``+``, ``/`` and ``.`` as words: ``Kernels + MoE`` -> ``kernels-plus-moe``."""
    for char, word in _WORDS:
        label = label.replace(char, word)
    return label_slug(label)


def names_for(step: StepName, templates: Iterable[str]) -> set[str]:
    """The check run names and status contexts that name ``step``."""
    fields = {
        "key": step.key,
        "label": step.label,
        "slug": label_slug(step.label),
        "slug_words": label_slug_words(step.label),
    }
    found = set()
    for template in templates:
        try:
            found.add(template.format_map(fields))
        except (KeyError, ValueError, IndexError):
            continue  # a template naming no field prbot knows names nothing
    return found


def named(
    name: str, names: set[str] | dict[str, str], shards: Mapping[str, int] | None = None
) -> str | None:
    """The one of ``names`` that ``name`` is, or is a shard of (``<name>-3``: one job of a
    step with parallelism; ``shards``: the names of sharded steps, with their job counts);
    None when it names none."""
    if name in names:
        return name
    shard = _SHARD.match(name)
    if shard is None or not shards:
        return None
    base, index = shard.group(1), int(shard.group(2))
    return base if base in names and index <= shards.get(base, 0) else None


def shard_counts(step: StepName, templates: Iterable[str]) -> dict[str, int]:
    """The names of a sharded step, each with its job count (empty when not sharded)."""
    if step.parallelism <= 1:
        return {}
    return dict.fromkeys(names_for(step, templates), step.parallelism)


def _check_run_state(run: Mapping[str, Any]) -> tuple[str, bool] | None:
    status = run.get("status")
    if status == "completed":
        return _CONCLUDED.get(str(run.get("conclusion")))
    word = _RUNNING.get(str(status))
    return (word, True) if word else None


def _is_own(run: Mapping[str, Any], own_app_id: int | None, own_slug: str | None) -> bool:
    app = run.get("app")
    if not isinstance(app, Mapping):
        return False
    return (own_app_id is not None and app.get("id") == own_app_id) or (
        own_slug is not None and app.get("slug") == own_slug
    )


def steps_in_checks(
    check_runs: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
    steps: Iterable[StepName],
    templates: Iterable[str],
    *,
    own_app_id: int | None,
    own_slug: str | None,
    check_run_apps: Sequence[str] = (),
) -> dict[str, SeenStep]:
    """For each step some check run or status names, the worst of the newest of each name
    that ran or is scheduled (failed, then going, then passed), else the newest that will not
    run (both lists newest first, as GitHub gives them).
    Check runs count only from the apps in ``check_run_apps`` (slugs)."""
    by_name: dict[str, str] = {}
    shards: dict[str, int] = {}
    templates = list(templates)
    for step in steps:
        for name in names_for(step, templates):
            by_name.setdefault(name, step.key)
        shards.update(shard_counts(step, templates))
    seen: dict[str, SeenStep] = {}
    # The newest that ran of each (source, name): one per shard of a step, re-runs left behind.
    newest: set[tuple[str, str]] = set()

    def step_of(name: object) -> str | None:
        found = named(str(name), by_name, shards)
        return by_name[found] if found is not None else None

    def keep(key: str, state: str, ran: bool, url: str, context: str, source: str) -> None:
        earlier = seen.get(key)
        if not ran:
            if earlier is None:
                seen[key] = SeenStep(key, state, None, url, ran, source, context)
            return
        if (source, context) in newest:
            return
        newest.add((source, context))
        if (
            earlier is not None
            and earlier.ran
            and _RANK.get(earlier.state, 1) <= _RANK.get(state, 1)
        ):
            return
        seen[key] = SeenStep(key, state, None, url, ran, source, context)

    for run in check_runs:
        if not isinstance(run, Mapping) or _is_own(run, own_app_id, own_slug):
            continue
        app = run.get("app") if isinstance(run.get("app"), Mapping) else {}
        slug = app.get("slug")  # type: ignore[union-attr]
        if slug not in check_run_apps:
            continue
        key = step_of(run.get("name"))
        state = _check_run_state(run) if key else None
        if key and state:
            url = str(run.get("details_url") or run.get("html_url") or "")
            keep(key, state[0], state[1], url, str(run["name"]), CHECK_RUN)
    for status in statuses:
        if not isinstance(status, Mapping):
            continue
        key = step_of(status.get("context"))
        state = _STATUS.get(str(status.get("state"))) if key else None
        if key and state:
            url = str(status.get("target_url") or "")
            keep(key, state[0], state[1], url, str(status["context"]), STATUS)
    return seen
