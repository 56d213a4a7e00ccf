"""prbot's modes: advisory by default, and the features a rule set switches on, each with the
GitHub App permissions it needs. One table for the manifest (``prbot app-manifest``,
``prbot setup``), the README's permission table (a test compares them) and the report's line
when a feature is on but the installation was not granted what it needs.

Advisory reads, comments and writes a check run; it dispatches nothing and pushes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

LEVELS = {"read": 1, "write": 2}

# permission -> (level, why), for every installation (advisory).
BASE_PERMISSIONS: dict[str, tuple[str, str]] = {
    "metadata": ("read", "every App has it; also the collaborator-permission lookup"),
    "contents": ("read", "git fetch of refs/pull/N/head and the base branch into the mirror"),
    "pull_requests": ("read", "the PR's current head for /recheck, the open-PR listing, reviews"),
    "issues": ("write", "the sticky report comment, command replies and the 👀 reaction"),
    "checks": ("write", "the prbot check run per head, and other apps' check runs of the head"),
    "statuses": ("read", "other apps' commit statuses of the head (vLLM's Buildkite: one a job)"),
}
# event -> why, for every installation. installation events reach every App unasked.
BASE_EVENTS: dict[str, str] = {
    "pull_request": "a report per head: opened, synchronize, reopened, edited, closed",
    "issue_comment": "commands such as /recheck and /prbot help",
    "check_run": "GitHub's Re-run and 'Apply fix' buttons; other apps' runs of a reported head",
    "check_suite": "GitHub's Re-run all button",
    "status": "other apps' commit statuses of a reported head: its smoke steps' states redrawn",
}


@dataclass(frozen=True)
class Feature:
    name: str
    what: str
    # What happens while the permission is not granted, as GitHub behaves.
    ungranted: str
    permissions: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    events: Mapping[str, str] = field(default_factory=dict)


FEATURES: dict[str, Feature] = {
    feature.name: feature
    for feature in (
        Feature(
            "dispatch",
            "GPU jobs dispatched to the repository's CI (a Buildkite token with write_builds, "
            "read_artifacts and read_user)",
            "teams in checks.jobs.trusted_teams cannot be read, so their members are not trusted",
            {"members": ("read", "trust by team membership (checks.jobs.trusted_teams)")},
        ),
        Feature(
            "autofix",
            "the 'Apply fix' button and /prbot fix push one commit to the PR's branch",
            "GitHub refuses the fix push",
            {"contents": ("write", "the fix commit, pushed by git (bot/fixes/push.py)")},
        ),
        Feature(
            "actions",
            "GPU jobs dispatched as GitHub Actions workflow runs (with dispatch)",
            "GitHub refuses the workflow dispatch",
            {"actions": ("write", "workflow_dispatch, and the runs and artifacts read")},
            {"workflow_run": "results of GPU jobs dispatched to GitHub Actions"},
        ),
    )
}


class UnknownFeature(ValueError):
    pass


def parse_features(text: str | None) -> tuple[str, ...]:
    """``"dispatch,autofix"`` -> the features named, in the table's order; a name prbot does
    not know raises UnknownFeature with one line."""
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    unknown = [name for name in names if name not in FEATURES]
    if unknown:
        raise UnknownFeature(
            f"no feature {unknown[0]!r} (known: {', '.join(FEATURES)}; advisory is the default)"
        )
    return tuple(name for name in FEATURES if name in names)


def permissions_for(features: Iterable[str] = ()) -> dict[str, tuple[str, str]]:
    """The permissions advisory mode and ``features`` need together (the higher level wins)."""
    found = dict(BASE_PERMISSIONS)
    for name in features:
        for permission, (level, why) in FEATURES[name].permissions.items():
            if LEVELS[level] > LEVELS[found.get(permission, ("read", ""))[0]] or (
                permission not in found
            ):
                found[permission] = (level, why)
    return found


def events_for(features: Iterable[str] = ()) -> dict[str, str]:
    found = dict(BASE_EVENTS)
    for name in features:
        found.update(FEATURES[name].events)
    return found


def missing_grants(features: Iterable[str], granted: Mapping[str, str] | None) -> list[str]:
    """One line per feature switched on whose permissions the installation lacks; none when
    what was granted is not known (the CLI, a dry run)."""
    if granted is None:
        return []
    lines = []
    for name in features:
        feature = FEATURES[name]
        lacking = [
            f"{permission}: {level}"
            for permission, (level, _) in feature.permissions.items()
            if LEVELS.get(str(granted.get(permission)), 0) < LEVELS[level]
        ]
        if lacking:
            lines.append(
                f"features.{name} is on but the App was not granted {', '.join(lacking)}: "
                f"{feature.ungranted} until an owner accepts the App's new permissions"
            )
    return lines
