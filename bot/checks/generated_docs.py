"""generated_docs: generated docs and files that a PR leaves out of step with their source.

Built-in extractors (the attention-backend tables) are compared cell by cell; generic
generator hooks run the repository's own command in a sandbox and compare the outputs.
A doc is only checked when the PR touches a path that feeds it.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.checks.base import Check, CheckContext, Section, Status
from bot.core.snapshot import Snapshot
from bot.gendocs.config import GeneratedDocsRules
from bot.gendocs.suite import check_docs, run_hooks

log = logging.getLogger(__name__)


def _order(finding: dict[str, Any]) -> tuple[int, int]:
    """Strongest first: drift, then unverifiable, then notes, then in sync."""
    errors = sum(1 for p in finding["problems"] if p["severity"] == "error")
    if finding["cells"] or finding.get("manual_edits"):
        rank = 0
    elif errors:
        rank = 1
    elif finding["problems"]:
        rank = 2
    else:
        rank = 3
    return rank, -len(finding["cells"])


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def describe_cells(cells: list[dict[str, Any]]) -> list[str]:
    """Differences counted as a reader sees them: whole rows once, then single cells."""
    missing = {(c["table"], c["row"]) for c in cells if c["kind"] == "missing_row"}
    extra = {(c["table"], c["row"]) for c in cells if c["kind"] == "extra_row"}
    single = sum(1 for c in cells if c["kind"] not in ("missing_row", "extra_row"))
    what = [f"{_count(len(missing), 'row')} missing"] if missing else []
    what += [f"{_count(len(extra), 'row')} not expected"] if extra else []
    what += [_count(single, "cell")] if single else []
    return what


def summarize(findings: list[dict[str, Any]]) -> tuple[Status, str]:
    """Section status and one-line summary from the findings (shared with ``prbot docs``)."""
    drifted = [f for f in findings if f["cells"] or f.get("manual_edits")]
    broken = [
        f
        for f in findings
        if f not in drifted and any(p["severity"] == "error" for p in f["problems"])
    ]
    noted = [f for f in findings if f not in drifted and f not in broken and f["problems"]]
    if drifted:
        parts = []
        for f in drifted:
            what = describe_cells(f["cells"])
            what += ["text edited by hand"] if f.get("manual_edits") else []
            parts.append(f"{f['path']} ({', '.join(what)})")
        return Status.FAIL, "out of sync: " + ", ".join(parts)
    if broken:
        first = next(p for p in broken[0]["problems"] if p["severity"] == "error")
        where = f"{first['path']}:{first['line']}" if first["line"] else first["path"]
        more = f" and {len(broken) - 1} more" if len(broken) > 1 else ""
        message = f"could not verify {broken[0]['path']}{more}: {where}: {first['message']}"
        # An error, not a warning: a PR that makes its doc unverifiable (a source that does
        # not parse, a file over a bound) must not pass a required check that drift would fail.
        return Status.ERROR, message
    if noted:
        count = sum(len(f["problems"]) for f in noted)
        return Status.WARN, f"{len(findings)} in sync, {count} source notes to read"
    previews = sum(len(f.get("preview") or []) for f in findings)
    tail = f"; {previews} generated-content changes previewed" if previews else ""
    names = ", ".join(f["path"] for f in findings[:3])
    more = f" and {len(findings) - 3} more" if len(findings) > 3 else ""
    return Status.PASS, f"in sync: {names}{more}{tail}"


def run(snapshot: Snapshot, rules: GeneratedDocsRules, context: CheckContext) -> Section:
    findings: list[dict[str, Any]] = []
    absent: list[str] = []  # relevant docs that exist at neither revision
    changed = snapshot.changed_paths
    outcomes = check_docs(
        rules,
        snapshot.head,
        snapshot.base,
        wanted=lambda doc: bool(snapshot.touches([*doc.feeds, doc.path, *doc.generator])),
        changed_paths=changed,
        cache=context.cache,
        runner=context.runner,
        work_dir=context.work_dir,
        trusted=snapshot.trusted,
    )
    for outcome in outcomes:
        doc = outcome.rule
        if outcome.problem is not None:
            findings.append(_problem_finding(doc.path, outcome.problem))
        elif outcome.result is not None:
            findings.append(outcome.result.to_json())
        elif snapshot.base.read_text(doc.path) is not None:
            findings.append(_problem_finding(doc.path, "the PR deletes this generated doc"))
        else:
            absent.append(doc.path)
    for result in run_hooks(
        rules,
        snapshot.head,
        runner=context.runner,
        work_dir=context.work_dir,
        wanted=lambda hook: bool(snapshot.touches([*hook.feeds, *hook.outputs, *hook.tooling])),
        base=snapshot.base,
        changed_paths=changed,
        trusted=snapshot.trusted,
    ):
        findings.append(result.to_json())
    if not findings and absent:
        names = ", ".join(absent)
        return Section("generated_docs", Status.SKIP, f"no generated doc to check: {names} absent")
    if not findings:
        return Section("generated_docs", Status.SKIP, "the PR touches no generated doc's sources")
    findings.sort(key=_order)
    status, summary = summarize(findings)
    return Section("generated_docs", status, summary, findings)


def _problem_finding(path: str, message: str) -> dict[str, Any]:
    return {
        "path": path,
        "in_sync": False,
        "cells": [],
        "kind": "doc",
        "problems": [{"path": path, "line": None, "severity": "error", "message": message}],
        "manual_edits": [],
        "preview": [],
        "notes": [],
        "patch": "",
        "fix_command": "",
    }


CHECK = Check(
    name="generated_docs",
    title="Generated docs",
    run=run,
    rules_model=GeneratedDocsRules,
    order=30,
    template="checks/generated_docs.md.j2",
)
