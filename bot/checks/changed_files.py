"""changed_files: the changed paths grouped by area, so a reviewer sees the PR's reach."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bot.checks.base import Check, CheckContext, CheckRules, Section, Status
from bot.core.globs import path_matches
from bot.core.snapshot import Snapshot


class ChangedFilesRules(CheckRules):
    # Area name -> glob patterns. A path goes to the first area that matches it.
    areas: dict[str, list[str]] = Field(default_factory=dict)
    # Areas listed here turn the section into a warning when touched (e.g. CI config).
    warn_on: list[str] = Field(default_factory=list)


def group_by_area(
    paths_with_counts: list[tuple[str, int, int]], areas: dict[str, list[str]]
) -> list[dict[str, Any]]:
    grouped: dict[str, dict[str, Any]] = {}
    for path, additions, deletions in paths_with_counts:
        area = next(
            (
                name
                for name, patterns in areas.items()
                if any(path_matches(path, p) for p in patterns)
            ),
            "other",
        )
        entry = grouped.setdefault(
            area, {"name": area, "files": [], "additions": 0, "deletions": 0}
        )
        entry["files"].append(path)
        entry["additions"] += additions
        entry["deletions"] += deletions
    order = list(areas) + ["other"]
    return sorted(grouped.values(), key=lambda a: order.index(a["name"]))


def run(snapshot: Snapshot, rules: ChangedFilesRules, context: CheckContext) -> Section:
    if not snapshot.files:
        return Section("changed_files", Status.SKIP, "no changed files")
    areas = group_by_area([(f.path, f.additions, f.deletions) for f in snapshot.files], rules.areas)
    additions = sum(f.additions for f in snapshot.files)
    deletions = sum(f.deletions for f in snapshot.files)
    names = ", ".join(f"{a['name']} ({len(a['files'])})" for a in areas)
    count = len(snapshot.files)
    summary = f"{count} file{'s' if count != 1 else ''}, +{additions}/−{deletions}: {names}"
    flagged = [a["name"] for a in areas if a["name"] in rules.warn_on]
    status = Status.WARN if flagged else Status.PASS
    if flagged:
        summary += f"; touches {', '.join(flagged)}"
    findings = [
        {
            "area": a["name"],
            "files": a["files"],
            "additions": a["additions"],
            "deletions": a["deletions"],
        }
        for a in areas
    ]
    return Section("changed_files", status, summary, findings, data={"areas": areas})


CHECK = Check(
    name="changed_files",
    title="Changed files",
    run=run,
    rules_model=ChangedFilesRules,
    order=90,
    template="checks/changed_files.md.j2",
)
