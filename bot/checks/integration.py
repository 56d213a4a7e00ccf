"""integration: what a new thing must be wired into, before a reviewer has to ask.

Rules are co-change rules. A *symbol rule* watches added lines in some files for new names
(e.g. a member added to ``AttentionBackendEnum``) and expects each new name to appear, as a
real entry and not in a comment, in other places at the PR's head: the CUDA priority lists,
the existing test file, the benchmark configs (under the names the benchmark runner maps).
An *imports rule* expects every third-party module the PR newly imports (no file at base
imports it) to be declared in a requirement file; a guarded import is optional and says so.
Everything is read through the snapshot; nothing is imported or run. The logic lives in
:mod:`bot.integration`.
"""

from __future__ import annotations

from bot.checks.base import Check, CheckContext, Section, Status, join_limited
from bot.core.snapshot import Snapshot
from bot.integration.checklist import Outcome, evaluate
from bot.integration.config import Expectation, IntegrationRule, IntegrationRules

__all__ = ["CHECK", "Expectation", "IntegrationRule", "IntegrationRules", "run"]

# The summary names this many symbols; the table has the rest.
SUMMARY_SYMBOLS = 3


def run(snapshot: Snapshot, rules: IntegrationRules, context: CheckContext) -> Section:
    if not rules.rules:
        return Section("integration", Status.SKIP, "no integration rules declared")
    if not any(snapshot.touches(r.paths) for r in rules.rules):
        return Section(
            "integration", Status.SKIP, "the PR touches no path an integration rule watches"
        )
    outcome = evaluate(snapshot, rules, context.cache)
    data = {
        "problems": outcome.problems,
        "wired_elsewhere": outcome.wired_elsewhere,
        "by_name": by_name(outcome.findings),
        "installed_by": outcome.installed_by,
    }
    status = Status.WARN if outcome.missing else Status.PASS
    return Section("integration", status, summarize(outcome), outcome.findings, data)


def by_name(findings: list[dict]) -> list[dict]:
    """The table's rows: one per new name (in findings order, strongest first), with where
    it was introduced once and every place it is still missing from."""
    rows: dict[str, dict] = {}
    for finding in findings:
        if finding.get("optional"):
            continue  # listed on their own line, not as gaps
        row = rows.setdefault(
            finding["symbol"],
            {
                "symbol": finding["symbol"],
                "aliases": [],
                "introduced_at": finding["introduced_at"],
                "path": finding["path"],
                "line": finding["line"],
                "places": [],
            },
        )
        for alias in finding.get("aliases") or []:
            if alias not in row["aliases"]:
                row["aliases"].append(alias)
        row["places"].append(
            {
                "where": finding["where"],
                "distribution": finding.get("distribution"),
                "missing_in": finding.get("missing_in") or [],
            }
        )
    return list(rows.values())


def summarize(outcome: Outcome) -> str:
    """One line: what is missing where (a few symbols, then a count), optional imports, and
    files that could not be read."""
    parts = []
    by_symbol: dict[str, list[str]] = {}
    for finding in outcome.missing:
        by_symbol.setdefault(finding["symbol"], []).append(finding["where"])
    if by_symbol:
        missing = [f"{s} not yet in {', '.join(w)}" for s, w in by_symbol.items()]
        parts.append(join_limited(missing, SUMMARY_SYMBOLS, "; "))
    elif outcome.checked_symbols or outcome.checked_imports:
        counted = [
            _count(outcome.checked_symbols, "new name"),
            _count(outcome.checked_imports, "added import"),
        ]
        parts.append(f"{' and '.join(c for c in counted if c)} checked: all wired in")
    else:
        parts.append("nothing new to wire in")
    notes = [f for f in outcome.findings if f.get("optional")]
    opt_in = list(dict.fromkeys(f["symbol"] for f in notes if f.get("opt_in")))
    if opt_in:
        names = join_limited(opt_in, SUMMARY_SYMBOLS)
        parts.append(f"opt-in, left out of automatic selection: {names}")
    optional = list(dict.fromkeys(f["symbol"] for f in notes if not f.get("opt_in")))
    if optional:
        names = join_limited(optional, SUMMARY_SYMBOLS)
        parts.append(f"optional imports not declared: {names}")
    if outcome.problems:
        count = len(outcome.problems)
        parts.append(f"{count} input problem{'s' if count != 1 else ''} (not read in full)")
    return "; ".join(parts)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}" if number else ""


CHECK = Check(
    name="integration",
    title="Integration checklist",
    run=run,
    rules_model=IntegrationRules,
    order=40,
    template="checks/integration.md.j2",
)
