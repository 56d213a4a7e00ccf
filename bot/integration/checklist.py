"""The checklist itself: each new name or import against what its rule expects at head."""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.core.sections import Cache
from bot.core.snapshot import Snapshot
from bot.integration.aliases import aliases_from_tables
from bot.integration.config import Expectation, IntegrationRule, IntegrationRules
from bot.integration.dependencies import check_imports
from bot.integration.distributions import declared_distributions
from bot.integration.headfiles import HeadFiles, Outcome, looked_in, new_finding
from bot.integration.opt_in import opt_in_reason
from bot.integration.symbols import NewSymbol, new_symbols

__all__ = ["HeadFiles", "Outcome", "evaluate", "is_wired"]

# A PR adding more new names than this to one watched file (a generated enum, a hostile
# diff) gets the first ones checked and a note, not minutes of searching.
MAX_SYMBOLS_PER_RULE = 100


def evaluate(snapshot: Snapshot, rules: IntegrationRules, cache: Cache | None) -> Outcome:
    """Every finding of the rules that the PR's changed paths make relevant."""
    outcome = Outcome()
    files = HeadFiles(snapshot.head, outcome.problems)
    symbol_findings, import_findings = [], []
    for rule in rules.rules:
        if not snapshot.touches(rule.paths):
            continue
        if rule.kind == "imports":
            import_findings += check_imports(snapshot, rule, files, cache, outcome)
        else:
            symbol_findings += _check_symbols(snapshot, rule, files, outcome)
    # Strongest first: wiring gaps, then undeclared imports, then optional ones.
    import_findings.sort(key=lambda f: bool(f.get("optional")))
    outcome.findings = symbol_findings + import_findings
    outcome.problems[:] = list(dict.fromkeys(outcome.problems))
    return outcome


# --- symbol rules ---------------------------------------------------------------------------


def _check_symbols(
    snapshot: Snapshot, rule: IntegrationRule, files: HeadFiles, outcome: Outcome
) -> list[dict]:
    findings = []
    items = new_symbols(snapshot, rule, outcome.problems)
    if len(items) > MAX_SYMBOLS_PER_RULE:
        outcome.problems.append(
            f"{len(items)} new names for rule `{rule.name}`: the first "
            f"{MAX_SYMBOLS_PER_RULE} were checked"
        )
    opt_in = _opt_in_test(rule, files, outcome) if items else None
    for item in items[:MAX_SYMBOLS_PER_RULE]:
        outcome.checked_symbols += 1
        reason = opt_in(item) if opt_in else None
        for expectation in rule.expect:
            if not expectation.applies_to(item.symbol):
                continue
            elsewhere = _used_in(item.symbol, rule, expectation.unless_used_in, files)
            if elsewhere:
                outcome.wired_elsewhere.append((item.symbol, expectation.where, elsewhere))
                continue
            names = [item.symbol, *_aliases(item, expectation, files)]
            missing = _missing(names, expectation, files)
            if missing is None:
                continue
            finding = new_finding(rule, expectation.where, item.symbol, item.path, item.line)
            finding["missing_in"] = looked_in(missing, expectation)
            if len(names) > 1:
                finding["aliases"] = names[1:]
            if reason:
                finding["optional"] = True
                finding["opt_in"] = reason
            findings.append(finding)
    return findings


def _opt_in_test(
    rule: IntegrationRule, files: HeadFiles, outcome: Outcome
) -> Callable[[NewSymbol], str | None] | None:
    """``item -> reason or None`` for the rule's opt-in signal, or None without one."""
    if rule.opt_in is None:
        return None
    paths = files.matching(rule.opt_in.requirements)
    declared = declared_distributions((path, files.text(path)) for path in paths)
    outcome.problems.extend(declared.problems)
    exists = set(files.all_paths()).__contains__
    opt_in = rule.opt_in
    return lambda item: opt_in_reason(item, opt_in, declared, files.text, exists, outcome.problems)


def is_wired(item: NewSymbol, expectation: Expectation, files: HeadFiles) -> bool:
    """Whether ``item`` is an entry (under its own name or an alias) of the expected files."""
    names = [item.symbol, *_aliases(item, expectation, files)]
    return _missing(names, expectation, files) is None


def _used_in(symbol: str, rule: IntegrationRule, globs: list[str], files: HeadFiles) -> str | None:
    """The first file among ``globs`` with an entry referring to ``symbol``, if any."""
    if not globs:
        return None
    regex = re.compile(rule.referenced_as.replace("{symbol}", re.escape(symbol)))
    for path in files.matching(globs):
        if symbol not in files.text(path):
            continue  # cheap test first: most files never mention it
        entries = files.entries(path) or frozenset()
        if any(regex.search(entry) for entry in entries):
            return path
    return None


def _aliases(item: NewSymbol, expectation: Expectation, files: HeadFiles) -> list[str]:
    names = list(expectation.aliases.get(item.symbol, []))
    if expectation.aliases_from:
        stands_for = {item.symbol} | ({item.class_name} if item.class_name else set())
        for path in files.matching(expectation.aliases_from):
            text = files.text(path)
            if not any(name in text for name in stands_for):
                continue
            tables = files.name_tables(path)
            if tables is not None:
                names += sorted(aliases_from_tables(tables, item.symbol, stands_for))
    return list(dict.fromkeys(n for n in names if n != item.symbol))


def _missing(names: list[str], expectation: Expectation, files: HeadFiles) -> list[str] | None:
    """The files none of ``names`` is an entry of (None when found, or when no file could be
    read to tell: that is a problem, not a gap)."""
    candidates = files.matching(expectation.paths)
    if not candidates:
        return list(expectation.paths)  # the rule names a place the head does not have yet
    regexes = [expectation.regex(name) for name in names]
    readable = 0
    for path in candidates:
        lowered = files.lowered(path)
        if not any(name.lower() in lowered for name in names):
            readable += 1  # read, and no entry can match
            continue
        entries = files.entries(path)
        if entries is None:
            continue
        readable += 1
        if any(regex.search(entry) for entry in entries for regex in regexes):
            return None
    return candidates if readable else None
