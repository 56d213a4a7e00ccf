"""Grouping the per-cell findings for the rendered section.

The JSON findings stay one per (platform, arch, python). A one-line change to ``common.txt``
reaches a dozen cells with the very same diff, so the Markdown folds cells that say the same
thing into one table row (per platform) and one details block (across platforms).
"""

from __future__ import annotations

import json
import re
from typing import Any

# What a details block says, apart from resolution (which varies by cell and is listed inside).
_CONTENT_FIELDS = (
    "moved",
    "added_from",
    "removed_from",
    "changed",
    "problems",
    "conflicts",
    "compiled",
    "ignored",
)
# A table row's columns, apart from the architecture.
_ROW_FIELDS = ("platform", "python", "resolution", "failing_at_base", "cached", "why")
_SUMMARY_PLATFORMS = 4
# Package lines shown per block; a new set of 200 packages stays readable (and the comment
# under GitHub's size limit). The JSON findings keep every one.
MAX_PACKAGE_LINES = 25


def _outcome_detail(finding: dict[str, Any]) -> str:
    """The resolution detail worth showing: a package count only repeats "ok" per cell."""
    detail = str(finding.get("detail") or "")
    if finding.get("resolution") == "ok":
        detail = re.sub(r"^\d+ packages(; )?", "", detail)
    return detail


def _arch_label(finding: dict[str, Any], show_python: bool) -> str:
    return f"{finding['arch']} py{finding['python']}" if show_python else str(finding["arch"])


def _platform_archs(findings: list[dict[str, Any]], show_python: bool) -> list[dict[str, Any]]:
    """[{platform, archs: [..]}] in first-seen order."""
    by_platform: dict[str, list[str]] = {}
    for finding in findings:
        by_platform.setdefault(finding["platform"], []).append(_arch_label(finding, show_python))
    return [{"platform": p, "archs": archs} for p, archs in by_platform.items()]


def is_folded(finding: dict[str, Any]) -> bool:
    """A cell with nothing to say: no package change, no problem, and it did not fail.

    Most are reached only by a watched file (``setup.py``: ``only_watched``); the rest by a
    change that left their set as it was (a comment, a pyproject.toml section uv never reads).
    """
    return (
        finding.get("kind") not in ("unreached", "compiled")
        and not any(finding.get(k) for k in ("added", "removed", "changed", *_CONTENT_FIELDS))
        and finding.get("resolution") != "failed"
        # A note on a resolved cell ("not passed to uv: -e .") is something to say; a skipped
        # cell's reason goes into the folded line.
        and (finding.get("resolution") == "skipped" or not _outcome_detail(finding))
    )


def _in_table(finding: dict[str, Any]) -> bool:
    return finding.get("kind") != "unreached" and not is_folded(finding)


def folded_rows(findings: list[dict[str, Any]], show_python: bool) -> dict[str, Any] | None:
    """The content-free cells as one line: how many, what made them affected, outcomes."""
    folded = [f for f in findings if is_folded(f)]
    if not folded:
        return None
    why = sorted({path for f in folded for path in f.get("why", [])})
    statuses: dict[str, int] = {}
    for finding in folded:
        statuses[finding["resolution"]] = statuses.get(finding["resolution"], 0) + 1
    reasons = [str(f["detail"]) for f in folded if f["resolution"] == "skipped" and f["detail"]]
    return {
        "size": len(folded),
        "why": why,
        "cells": _platform_archs(folded, show_python),
        "statuses": [{"status": k, "size": n} for k, n in statuses.items()],
        "reasons": list(dict.fromkeys(reasons)),
    }


def unreached_blocks(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Changed requirement files in no declared set, each with its (cut) package changes."""
    blocks = []
    for finding in findings:
        if finding.get("kind") != "unreached":
            continue
        shown = {k: finding[k] for k in ("added_from", "removed_from", "changed")}
        hidden = 0
        for key in shown:
            hidden += max(0, len(shown[key]) - MAX_PACKAGE_LINES)
            shown[key] = shown[key][:MAX_PACKAGE_LINES]
        blocks.append(
            {
                **shown,
                "path": finding["platform"],
                "reached_by": finding.get("reached_by", []),
                "counts": [len(finding[k]) for k in ("added", "removed", "changed")],
                "hidden_changes": hidden,
            }
        )
    return blocks


def table_rows(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One table row per platform and identical columns; architectures joined, order kept."""
    rows: dict[str, dict[str, Any]] = {}
    for finding in filter(_in_table, findings):
        counts = [len(finding[k]) for k in ("added", "removed", "changed")]
        key = json.dumps([finding.get(k) for k in _ROW_FIELDS] + counts, default=str)
        if key in rows:
            rows[key]["archs"].append(finding["arch"])
            continue
        rows[key] = {
            **{k: finding.get(k) for k in _ROW_FIELDS},
            "archs": [finding["arch"]],
            "added": counts[0],
            "removed": counts[1],
            "changed": counts[2],
        }
    return list(rows.values())


def detail_groups(findings: list[dict[str, Any]], show_python: bool) -> list[dict[str, Any]]:
    """Cells whose details say the same, each group with its resolutions grouped by outcome."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for finding in filter(_in_table, findings):
        if not any(finding.get(k) for k in _CONTENT_FIELDS) and not _outcome_detail(finding):
            continue
        key = json.dumps([finding.get(k) for k in _CONTENT_FIELDS], sort_keys=True, default=str)
        groups.setdefault(key, []).append(finding)
    return [_group(members, show_python) for members in groups.values()]


def _group(members: list[dict[str, Any]], show_python: bool) -> dict[str, Any]:
    outcomes: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for finding in members:
        key = (finding["resolution"], _outcome_detail(finding), finding["failing_at_base"])
        outcomes.setdefault(key, []).append(finding)
    cells = _platform_archs(members, show_python)
    first = members[0]
    statuses: dict[str, int] = {}
    for finding in members:
        statuses[finding["resolution"]] = statuses.get(finding["resolution"], 0) + 1
    shown = {k: first.get(k) or [] for k in _CONTENT_FIELDS}
    hidden = 0
    for k in ("added_from", "removed_from", "changed"):
        hidden += max(0, len(shown[k]) - MAX_PACKAGE_LINES)
        shown[k] = shown[k][:MAX_PACKAGE_LINES]
    return {
        **shown,
        "hidden_changes": hidden,
        "size": len(members),
        "cells": cells,
        "summary_cells": cells[:_SUMMARY_PLATFORMS],
        "more_platforms": max(0, len(cells) - _SUMMARY_PLATFORMS),
        "statuses": [{"status": k, "size": n} for k, n in statuses.items()],
        "resolutions": [
            {
                "status": status,
                "detail": detail,
                "failing_at_base": at_base,
                "cells": _platform_archs(found, show_python),
                "size": len(found),
            }
            for (status, detail, at_base), found in outcomes.items()
        ],
    }


def unaffected_names(labels: list[str], archs_by_target: dict[str, tuple[str, ...]]) -> list[str]:
    """``cuda``, ``cpu (ppc64le)``: targets no change reached, each arch named only if some were."""
    by_target: dict[str, list[str]] = {}
    for label in labels:
        target, _, arch = label.partition("/")
        archs = by_target.setdefault(target, [])
        if arch not in archs:  # one label per Python version
            archs.append(arch)
    return [
        name if set(archs) >= set(archs_by_target.get(name, ())) else f"{name} ({', '.join(archs)})"
        for name, archs in by_target.items()
    ]
