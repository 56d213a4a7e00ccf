"""requirements: what each platform × architecture now gets, and whether it still resolves."""

from __future__ import annotations

from typing import Any

from bot.checks.base import Check, CheckContext, Section, Status
from bot.requirements.analysis import Analysis, Row, StaleCompiled, analyse
from bot.requirements.config import RequirementsRules
from bot.requirements.effective import change_source, change_texts
from bot.requirements.matrix import build_targets
from bot.requirements.presentation import detail_groups, table_rows, unaffected_names
from bot.snapshot import Snapshot

CHECK_NAME = "requirements"


def row_finding(row: Row) -> dict[str, Any]:
    """One row as a finding of the JSON contract (plus extra fields)."""
    resolution = row.resolution
    detail_parts = [resolution.detail] if resolution and resolution.detail else []
    detail_parts += row.notes
    finding: dict[str, Any] = {
        "platform": row.cell.target.name,
        "arch": row.cell.arch,
        "added": [e.display() for e in row.diff.added],
        "removed": [e.display() for e in row.diff.removed],
        "changed": [],
        "resolution": resolution.status if resolution else "skipped",
        "detail": "; ".join(detail_parts),
        "kind": row.cell.target.kind,
        "python": row.cell.python,
        "why": row.why,
        "cached": bool(resolution and resolution.cached),
        "failing_at_base": row.failing_at_base,
        "added_from": [_origin(e) for e in row.diff.added],
        "removed_from": [_origin(e) for e in row.diff.removed],
        "problems": [
            {"file": p.file, "line": p.line, "message": p.message, "new": new}
            for p, new in row.problems
        ],
        "conflicts": [{**c.to_json(), "new": new} for c, new in row.conflicts],
        "compiled": [item.to_json() for item in row.compiled],
        "ignored": [item.to_json() for item in row.ignored],
    }
    for before, after in row.diff.changed:
        old, new = change_texts(before, after)
        source, side = change_source(before, after)
        finding["changed"].append(
            {
                "name": after.name,
                "from": old,
                "to": new,
                "file": source.file,
                "line": source.line,
                "side": side,  # the line is at head, or at base when the PR removed it
            }
        )
    return finding


def _origin(entry: Any) -> dict[str, Any]:
    source = entry.sources[0] if entry.sources else None
    return {
        "requirement": entry.display(),
        "file": source.file if source else "",
        "line": source.line if source else 0,
    }


def orphan_finding(item: StaleCompiled) -> dict[str, Any]:
    """A stale compiled file that no declared set owns, still shaped like a row."""
    return {
        "platform": item.path,
        "arch": "any",
        "added": [],
        "removed": [],
        "changed": [],
        "resolution": "skipped",
        "detail": "compiled file with no declared set",
        "kind": "compiled",
        "python": "",
        "why": item.changed_sources,
        "cached": False,
        "failing_at_base": False,
        "added_from": [],
        "removed_from": [],
        "problems": [],
        "conflicts": [],
        "compiled": [item.to_json()],
        "ignored": [],
    }


def status_and_summary(analysis: Analysis) -> tuple[Status, str]:
    rows = analysis.rows
    failing = [r for r in rows if r.resolution and r.resolution.status == "failed"]
    failed = [r for r in failing if not r.failing_at_base]
    inherited = [r for r in failing if r.failing_at_base]
    broken = [r for r in rows if r.new_problems]
    conflicts = {c.key() for r in rows for c, new in r.conflicts if new}
    stale = {s.path for r in rows for s in r.compiled} | {s.path for s in analysis.orphan_compiled}
    changed = sum(1 for r in rows if r.diff)
    parts = [f"{len(rows)} of {len(rows) + len(analysis.unaffected)} cells affected"]
    if changed:
        parts.append(f"{changed} with package changes")
    if failed:
        parts.append("does not resolve on " + ", ".join(_labels(failed)))
    if inherited:
        parts.append("already failing at base on " + ", ".join(_labels(inherited)))
    if broken:
        problems = {p.location() for r in broken for p in r.new_problems}
        parts.append(f"{len(problems)} error(s) in requirement files")
    if conflicts:
        parts.append(f"{len(conflicts)} inconsistent pin(s)")
    if stale:
        parts.append(f"stale compiled file(s): {', '.join(sorted(stale))}")
    ok = [r for r in rows if r.resolution and r.resolution.status == "ok"]
    if ok and not failed:
        parts.append(f"resolves on {len(ok)}")
    unresolved = [
        r for r in rows if r.resolution and r.resolution.status == "skipped" and not r.new_problems
    ]
    if unresolved:
        reason = unresolved[0].resolution.detail  # type: ignore[union-attr]
        reason = reason if len(reason) <= 80 else reason[:79] + "…"
        parts.append(f"not resolved on {len(unresolved)} ({reason})")
    if failed or broken:
        status = Status.FAIL
    elif conflicts or stale or inherited:
        status = Status.WARN
    else:
        status = Status.PASS
    return status, "; ".join(parts)


def _labels(rows: list[Row]) -> list[str]:
    seen: list[str] = []
    for row in rows:
        if row.cell.label not in seen:
            seen.append(row.cell.label)
    return seen


def run(snapshot: Snapshot, rules: RequirementsRules, context: CheckContext) -> Section:
    analysis = analyse(snapshot, rules, context)
    if not analysis.relevant:
        return Section(CHECK_NAME, Status.SKIP, analysis.reason)
    show_python = len(rules.python_versions) > 1
    findings = [row_finding(row) for row in analysis.rows]
    findings += [orphan_finding(item) for item in analysis.orphan_compiled]
    status, summary = status_and_summary(analysis)
    data = {
        # The Markdown folds cells that say the same thing; the findings stay one per cell.
        "table": table_rows(findings),
        "groups": detail_groups(findings, show_python),
        "show_python": show_python,
        "unaffected": analysis.unaffected,
        "unaffected_names": unaffected_names(
            analysis.unaffected, {t.name: t.archs for t in build_targets(rules)}
        ),
        "uv_runs": analysis.uv_runs,
    }
    return Section(CHECK_NAME, status, summary, findings, data=data)


CHECK = Check(
    name=CHECK_NAME,
    title="Requirements per architecture",
    run=run,
    rules_model=RequirementsRules,
    order=20,
    template="checks/requirements.md.j2",
)
