"""The checklist itself: each new name or import against what its rule expects at head."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from bot.check_types import Cache
from bot.integration.aliases import aliases_from_tables, name_tables
from bot.integration.distributions import Declared, declared_as, declared_distributions
from bot.integration.entries import file_entries
from bot.integration.imports import ImportSite, imported_anywhere, imports_in
from bot.integration.rules import Expectation, IntegrationRule, IntegrationRules
from bot.integration.symbols import NewSymbol, new_symbols
from bot.limits import InputRejected
from bot.snapshot import Snapshot, TreeReader, path_matches

MAX_MISSING_PATHS = 10
# A PR adding more new names than this to one watched file (a generated enum, a hostile
# diff) gets the first ones checked and a note, not minutes of searching.
MAX_SYMBOLS_PER_RULE = 100
_BASE_IMPORTS = "integration-base-imports"


class HeadFiles:
    """Files of one tree by glob, each read and parsed once per run; problems collected."""

    def __init__(self, tree: TreeReader, problems: list[str]) -> None:
        self.tree = tree
        self.problems = problems
        self._all: list[str] | None = None
        self._matching: dict[tuple[str, ...], list[str]] = {}
        self._text: dict[str, str] = {}
        self._lowered: dict[str, str] = {}
        self._tables: dict[str, list[tuple[str, frozenset[str]]] | None] = {}
        self._entries: dict[str, frozenset[str] | None] = {}
        # Top-level modules and packages of the tree itself (``tools``, ``setup``...).
        self.own_modules: set[str] | None = None

    def all_paths(self) -> list[str]:
        if self._all is None:
            self._all = self.tree.list_paths()
        return self._all

    def matching(self, globs: list[str]) -> list[str]:
        key = tuple(globs)
        if key not in self._matching:
            self._matching[key] = [
                p for p in self.all_paths() if any(path_matches(p, g) for g in globs)
            ]
        return self._matching[key]

    def text(self, path: str) -> str:
        if path not in self._text:
            self._text[path] = self.tree.read_text(path) or ""
        return self._text[path]

    def lowered(self, path: str) -> str:
        if path not in self._lowered:
            self._lowered[path] = self.text(path).lower()
        return self._lowered[path]

    def name_tables(self, path: str) -> list[tuple[str, frozenset[str]]] | None:
        """The tables of names in a Python file (``aliases.name_tables``), or None."""
        if path not in self._tables:
            try:
                self._tables[path] = name_tables(path, self.text(path))
            except InputRejected as exc:
                self.problems.append(str(exc))
                self._tables[path] = None
        return self._tables[path]

    def entries(self, path: str) -> frozenset[str] | None:
        """The file's real entries, or None when it could not be read (a problem says why)."""
        if path not in self._entries:
            try:
                self._entries[path] = file_entries(path, self.text(path))
            except InputRejected as exc:
                self.problems.append(str(exc))
                self._entries[path] = None
        return self._entries[path]


@dataclass
class Outcome:
    findings: list[dict[str, Any]] = field(default_factory=list)
    checked_symbols: int = 0
    checked_imports: int = 0
    problems: list[str] = field(default_factory=list)
    # (symbol, where, path): expectations skipped because the repository wires it elsewhere.
    wired_elsewhere: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def missing(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if not f.get("optional")]


def evaluate(snapshot: Snapshot, rules: IntegrationRules, cache: Cache | None) -> Outcome:
    """Every finding of the rules that the PR's changed paths make relevant."""
    outcome = Outcome()
    files = HeadFiles(snapshot.head, outcome.problems)
    symbol_findings, import_findings = [], []
    for rule in rules.rules:
        if not snapshot.touches(rule.paths):
            continue
        if rule.kind == "imports":
            import_findings += _check_imports(snapshot, rule, files, cache, outcome)
        else:
            symbol_findings += _check_symbols(snapshot, rule, files, outcome)
    # Strongest first: wiring gaps, then undeclared imports, then optional ones.
    import_findings.sort(key=lambda f: bool(f.get("optional")))
    outcome.findings = symbol_findings + import_findings
    outcome.problems[:] = list(dict.fromkeys(outcome.problems))
    return outcome


def _finding(rule: IntegrationRule, where: str, symbol: str, path: str, line: int) -> dict:
    return {
        "rule": rule.name,
        "symbol": symbol,
        "missing_in": [],
        "where": where,
        "introduced_at": f"{path}:{line}",
        "path": path,
        "line": line,
    }


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
    for item in items[:MAX_SYMBOLS_PER_RULE]:
        outcome.checked_symbols += 1
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
            finding = _finding(rule, expectation.where, item.symbol, item.path, item.line)
            finding["missing_in"] = _looked_in(missing, expectation)
            if len(names) > 1:
                finding["aliases"] = names[1:]
            findings.append(finding)
    return findings


def _looked_in(paths: list[str], expectation: Expectation) -> list[str]:
    """The files looked in, or the rule's globs when they are too many to list."""
    return paths if paths and len(paths) <= MAX_MISSING_PATHS else list(expectation.paths)


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


# --- imports rules --------------------------------------------------------------------------


def _check_imports(
    snapshot: Snapshot,
    rule: IntegrationRule,
    files: HeadFiles,
    cache: Cache | None,
    outcome: Outcome,
) -> list[dict]:
    sites = _candidate_imports(snapshot, rule, files, outcome.problems)
    if not sites:
        return []
    declared = [_declared(expectation, files, outcome) for expectation in rule.expect]
    # (module, expectation index) pairs no declaration covers; only those need the base
    # walk, which most PRs (importing what the project already declares) never reach.
    gaps = [
        (module, index)
        for module in sites
        for index in range(len(rule.expect))
        if not declared_as(module, rule.distributions_for(module), declared[index])
    ]
    known = _imported_at_base(snapshot, {m for m, _ in gaps}, cache, outcome.problems)
    outcome.checked_imports += len(sites)
    findings = []
    for module, index in gaps:
        if module in known:
            continue  # not new: some file at base already imports it
        site, expectation = sites[module], rule.expect[index]
        mapped = rule.distributions_for(module)
        finding = _finding(rule, expectation.where, module, site.path, site.line)
        finding["distribution"] = canonicalize_name(mapped[0] if mapped else module)
        if site.guard:
            finding["optional"] = True
            finding["guard"] = site.guard
            finding["where"] = f"{expectation.where} (optional: guarded by {site.guard})"
        else:
            finding["missing_in"] = _looked_in(files.matching(expectation.paths), expectation)
        findings.append(finding)
    return findings


def _declared(expectation: Expectation, files: HeadFiles, outcome: Outcome) -> Declared:
    paths = files.matching(expectation.paths)
    declared = declared_distributions((path, files.text(path)) for path in paths)
    outcome.problems.extend(declared.problems)
    return declared


def _candidate_imports(
    snapshot: Snapshot, rule: IntegrationRule, files: HeadFiles, problems: list[str]
) -> dict[str, ImportSite]:
    """Third-party modules that import statements on the PR's added lines name, one site
    each: an unguarded site if there is one (the dependency is then required), else the
    first guarded one. The whole file is parsed, since a guard may sit lines away."""
    own = set(rule.first_party) | set(rule.ignore)
    sites: dict[str, ImportSite] = {}
    for changed in snapshot.files:
        if changed.status == "removed" or not changed.path.endswith(".py"):
            continue
        if not any(path_matches(changed.path, p) for p in rule.paths):
            continue
        added = {number for number, text in changed.added_lines() if "import" in text}
        if not added:
            continue
        try:
            found = imports_in(changed.path, files.text(changed.path))
        except InputRejected as exc:
            problems.append(str(exc))
            continue
        for site in found:
            if site.line not in added:
                continue
            if site.module in sys.stdlib_module_names or site.module in own:
                continue
            if site.typing_only:
                continue  # for type checkers; nothing to install
            kept = sites.get(site.module)
            if kept is None or (kept.guard and not site.guard):
                sites[site.module] = site
    # A top-level module or package of the repository itself is first party.
    return {m: s for m, s in sites.items() if not _is_own_module(files, m)}


def _is_own_module(files: HeadFiles, module: str) -> bool:
    if files.own_modules is None:
        files.own_modules = {
            path.split("/", 1)[0].removesuffix(".py")
            for path in files.all_paths()
            if path.endswith(".py") and path.count("/") <= 1
        }
    return module in files.own_modules


def _imported_at_base(
    snapshot: Snapshot, modules: set[str], cache: Cache | None, problems: list[str]
) -> set[str]:
    """Which modules some Python file at base imports, cached per base commit and module."""
    known, unknown = set(), set()
    for module in modules:
        hit = cache.get(_BASE_IMPORTS, f"{snapshot.base_sha}:{module}") if cache else None
        if hit is None:
            unknown.add(module)
        elif hit == "1":
            known.add(module)
    if unknown:
        python_files = [p for p in snapshot.base.list_paths() if p.endswith(".py")]
        before = len(problems)
        found = imported_anywhere(snapshot.base, python_files, unknown, problems)
        known |= found
        if cache and len(problems) == before:  # an incomplete scan is not remembered
            for module in unknown:
                answer = "1" if module in found else "0"
                cache.put(_BASE_IMPORTS, f"{snapshot.base_sha}:{module}", answer)
    return known
