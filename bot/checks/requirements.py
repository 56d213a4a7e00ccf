"""requirements: what each platform × architecture now gets, and whether it still resolves."""

from __future__ import annotations

from typing import Any

from bot.checks.base import Check, CheckContext, Section, Status
from bot.core.snapshot import Snapshot
from bot.requirements.analysis import analyse
from bot.requirements.config import RequirementsRules
from bot.requirements.effective import SetDiff, change_source, change_texts
from bot.requirements.matrix import build_targets
from bot.requirements.presentation import (
    detail_groups,
    folded_rows,
    table_rows,
    unaffected_names,
    unreached_blocks,
)
from bot.requirements.rows import Analysis, Row, StaleCompiled
from bot.requirements.unreached import Unreached

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
        "moved": [
            {"path": head, "from": base, "stays": row.moved_left.get(head)}
            for head, base in row.moved_entries.items()
        ],
        "only_watched": row.only_watched,
    }
    finding["changed"] = _changes(row.diff)
    return finding


def _changes(diff: SetDiff) -> list[dict[str, Any]]:
    out = []
    for before, after in diff.changed:
        old, new = change_texts(before, after)
        source, side = change_source(before, after)
        # The value shown merges every head line for the package (a pin in test/cuda.in with
        # the range its -c file gives): name the others, or the cited line reads otherwise.
        merged = dict.fromkeys(s for s in after.sources if (s, side) != (source, "head"))
        out.append(
            {
                "name": after.name,
                "from": old,
                "to": new,
                "file": source.file,
                "line": source.line,
                "side": side,  # the line is at head, or at base when the PR removed it
                "with": [{"file": s.file, "line": s.line} for s in merged],  # at head
            }
        )
    return out


def unreached_finding(item: Unreached) -> dict[str, Any]:
    """A changed requirement file no declared set reaches, still shaped like a row."""
    reached = "; ".join(item.reached_by) if item.reached_by else "nothing reaches it"
    return {
        **_empty_row(item.path, "unreached"),
        "added": [e.display() for e in item.diff.added],
        "removed": [e.display() for e in item.diff.removed],
        "changed": _changes(item.diff),
        "detail": f"in no declared platform or set; {reached}",
        "why": [item.path],
        "added_from": [_origin(e) for e in item.diff.added],
        "removed_from": [_origin(e) for e in item.diff.removed],
        "reached_by": item.reached_by,
        "compiled_output": item.compiled,
    }


def _empty_row(platform: str, kind: str) -> dict[str, Any]:
    return {
        "platform": platform,
        "arch": "any",
        "added": [],
        "removed": [],
        "changed": [],
        "resolution": "skipped",
        "detail": "",
        "kind": kind,
        "python": "",
        "why": [],
        "cached": False,
        "failing_at_base": False,
        "added_from": [],
        "removed_from": [],
        "problems": [],
        "conflicts": [],
        "compiled": [],
        "ignored": [],
        "moved": [],
        "only_watched": False,
    }


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
        **_empty_row(item.path, "compiled"),
        "detail": "compiled file with no declared set",
        "why": item.changed_sources,
        "compiled": [item.to_json()],
    }


def status_and_summary(analysis: Analysis) -> tuple[Status, str]:
    """The section's status and one-line summary.

    A cell that was not resolved is never a pass: the section is ``warn`` with what was not
    resolved and why, or ``skip`` when no cell was resolved and nothing else was found.
    """
    rows = analysis.rows
    failing = [r for r in rows if r.resolution and r.resolution.status == "failed"]
    failed = [r for r in failing if not r.failing_at_base]
    inherited = [r for r in failing if r.failing_at_base]
    broken = [r for r in rows if r.new_problems]
    conflicts = {c.key() for r in rows for c, new in r.conflicts if new}
    compiled = [s for r in rows for s in r.compiled] + analysis.orphan_compiled
    stale = sorted({s.path for s in compiled if s.verdict == "stale"})
    maybe_stale = sorted({s.path for s in compiled if s.verdict != "stale"} - set(stale))
    changed = sum(1 for r in rows if r.diff)
    parts = [f"{len(rows)} of {len(rows) + len(analysis.unaffected)} cells affected"]
    if changed:
        parts.append(f"{changed} with package changes")
    moved = sorted({f"{m} → {e}" for r in rows for e, m in r.moved_entries.items()})
    if moved:
        parts.append("moved " + ", ".join(moved))
    if failed:
        parts.append("does not resolve on " + ", ".join(_labels(failed)))
    if inherited:
        parts.append("already failing at base on " + ", ".join(_labels(inherited)))
    if broken:
        problems = {p.location() for r in broken for p in r.new_problems}
        parts.append(
            f"{len(problems)} error{'s' if len(problems) != 1 else ''} in requirement files"
        )
    if conflicts:
        parts.append(f"{len(conflicts)} inconsistent pin{'s' if len(conflicts) != 1 else ''}")
    if stale:
        parts.append(f"stale compiled file{'s' if len(stale) != 1 else ''}: {', '.join(stale)}")
    if maybe_stale:
        parts.append(f"may be stale: {', '.join(maybe_stale)}")
    ok = [r for r in rows if r.resolution and r.resolution.status == "ok"]
    if ok and not failed:
        parts.append(f"resolves on {len(ok)}")
    unresolved = [r for r in rows if not r.resolution or r.resolution.status == "skipped"]
    if unresolved:
        parts.append(f"not resolved on {len(unresolved)} ({_unresolved_reasons(unresolved)})")
    if analysis.unreached:
        names = ", ".join(u.path for u in analysis.unreached[:3])
        extra = len(analysis.unreached) - 3 + analysis.unreached_more
        more = f" +{extra}" if extra > 0 else ""
        parts.append(f"in no declared set: {names}{more}")
    if failed or broken:
        status = Status.FAIL
    elif conflicts or stale or maybe_stale or inherited:
        status = Status.WARN
    elif unresolved and not ok and not changed and not moved:
        status = Status.SKIP  # nothing was resolved, and there is nothing else to say
    elif unresolved:
        status = Status.WARN
    elif rows:
        status = Status.PASS
    elif analysis.unreached:
        # Only files no declared set reaches changed: nothing was checked, but the changes
        # and what installs those files are worth a look, and a skipped section has no fold.
        status = Status.WARN
    else:
        status = Status.SKIP
    return status, "; ".join(parts)


def _unresolved_reasons(rows: list[Row]) -> str:
    """Each distinct reason once, with the cells it holds for: "2: index unreachable: …"."""
    by_reason: dict[str, int] = {}
    for row in rows:
        reason = row.resolution.detail if row.resolution else "not attempted"
        if reason.startswith("index unreachable: "):
            # "index unreachable: HOST: cause": the host is what differs; the cell says why.
            reason = ":".join(reason.split(":", 2)[:2])
        reason = reason if len(reason) <= 80 else reason[:79] + "…"
        by_reason[reason] = by_reason.get(reason, 0) + 1
    if len(by_reason) == 1:
        return next(iter(by_reason))
    shown = [f"{n}: {reason}" for reason, n in list(by_reason.items())[:3]]
    if len(by_reason) > 3:
        more = len(by_reason) - 3
        shown.append(f"{more} more reason{'s' if more != 1 else ''}")
    return "; ".join(shown)


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
    findings += [unreached_finding(item) for item in analysis.unreached]
    status, summary = status_and_summary(analysis)
    data = {
        # The Markdown folds cells that say the same thing; the findings stay one per cell.
        "table": table_rows(findings),
        "folded": folded_rows(findings, show_python),
        "groups": detail_groups(findings, show_python),
        "unreached": unreached_blocks(findings),
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
