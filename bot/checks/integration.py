"""integration: what a new thing must be wired into, before a reviewer has to ask.

Rules are co-change rules. A *symbol rule* watches added lines in some files for new names
(e.g. a member added to ``AttentionBackendEnum``) and expects each new name to appear in
other places at the PR's head: the CUDA priority lists, the existing test file, the
benchmark configs. An *imports rule* expects every third-party module a PR newly imports
to be declared in a requirement file (the optional dependency reviewers ask for).
Everything is read through the snapshot; nothing is imported or run.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.checks.base import Check, CheckContext, CheckRules, Section, Status, join_limited
from bot.snapshot import Snapshot, TreeReader, path_matches

_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import\b|import\s+([A-Za-z_][\w.]*))")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _compiles(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
    return value


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    where: str  # what a reviewer would call it: "CUDA priority lists"
    paths: list[str] = Field(min_length=1)  # globs read at the PR's head
    # How the symbol must appear; "{symbol}" is replaced by the (escaped) new name.
    pattern: str = r"\b{symbol}\b"
    when: str | None = None  # applies only to symbols matching this regex
    unless: str | None = None  # never applies to symbols matching this regex

    @field_validator("when", "unless")
    @classmethod
    def _conditions_compile(cls, value: str | None) -> str | None:
        return _compiles(value)

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str) -> str:
        if "{symbol}" not in value:
            raise ValueError("pattern must contain {symbol}")
        _compiles(value.replace("{symbol}", "X"))
        return value

    def applies_to(self, symbol: str) -> bool:
        if self.when and not re.search(self.when, symbol):
            return False
        return not (self.unless and re.search(self.unless, symbol))


class IntegrationRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    kind: Literal["symbol", "imports"] = "symbol"
    paths: list[str] = Field(min_length=1)  # where new symbols / imports are looked for
    # symbol rules: a regex over added lines whose first group is the new name.
    added: str | None = None
    expect: list[Expectation] = Field(min_length=1)
    # imports rules: top-level modules that are the project's own, and import -> dist names.
    first_party: list[str] = Field(default_factory=list)
    distributions: dict[str, str] = Field(default_factory=dict)
    # Modules never reported: typing-only names, modules shipped inside another package.
    ignore: list[str] = Field(default_factory=list)

    @field_validator("added")
    @classmethod
    def _added_has_group(cls, value: str | None) -> str | None:
        if value is not None and re.compile(_compiles(value) or "").groups < 1:
            raise ValueError("added must capture the new name in a group")
        return value


class IntegrationRules(CheckRules):
    rules: list[IntegrationRule] = Field(default_factory=list)


@dataclass(frozen=True)
class NewSymbol:
    symbol: str
    path: str
    line: int


def new_symbols(snapshot: Snapshot, rule: IntegrationRule) -> list[NewSymbol]:
    """Names the PR adds on lines matching ``rule.added`` that were not in the file at base."""
    pattern = re.compile(rule.added or "")
    found: dict[str, NewSymbol] = {}
    for changed in snapshot.files:
        if not any(path_matches(changed.path, p) for p in rule.paths):
            continue
        before = snapshot.base.read_text(changed.previous_path or changed.path) or ""
        for line_number, text in changed.added_lines():
            match = pattern.search(text)
            if not match or not match.group(1):
                continue
            name = match.group(1)
            if re.search(rf"\b{re.escape(name)}\b", before) or name in found:
                continue  # moved or reformatted, not new
            found[name] = NewSymbol(name, changed.path, line_number)
    return list(found.values())


def new_imports(snapshot: Snapshot, rule: IntegrationRule) -> list[NewSymbol]:
    """Third-party top-level modules the PR newly imports in files matching the rule."""
    own = set(rule.first_party) | set(rule.ignore)
    found: dict[str, NewSymbol] = {}
    for changed in snapshot.files:
        if not changed.path.endswith(".py") or not any(
            path_matches(changed.path, p) for p in rule.paths
        ):
            continue
        for line_number, text in changed.added_lines():
            match = _IMPORT.match(text)
            if not match:
                continue
            module = (match.group(1) or match.group(2)).split(".")[0]
            if module in sys.stdlib_module_names or module in own or module in found:
                continue
            found[module] = NewSymbol(module, changed.path, line_number)
    return list(found.values())


class _Files:
    """Head files by glob, each read once per run."""

    def __init__(self, tree: TreeReader) -> None:
        self.tree = tree
        self._all: list[str] | None = None
        self._text: dict[str, str] = {}

    def matching(self, globs: list[str]) -> list[str]:
        if self._all is None:
            self._all = self.tree.list_paths()
        return [p for p in self._all if any(path_matches(p, g) for g in globs)]

    def text(self, path: str) -> str:
        if path not in self._text:
            self._text[path] = self.tree.read_text(path) or ""
        return self._text[path]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions(files: _Files, globs: list[str]) -> set[str]:
    """Requirement names in requirement-style files (and quoted in pyproject/setup)."""
    names: set[str] = set()
    for path in files.matching(globs):
        for line in files.text(path).splitlines():
            stripped = line.strip().strip("\"',")
            if not stripped or stripped.startswith(("#", "-", "[")):
                continue
            match = _REQUIREMENT_NAME.match(stripped)
            if match:
                names.add(_normalise(match.group(1)))
    return names


def missing_for(symbol: str, expectation: Expectation, files: _Files) -> list[str] | None:
    """The globs the symbol is missing from (None when found or when it does not apply)."""
    if not expectation.applies_to(symbol):
        return None
    regex = re.compile(expectation.pattern.replace("{symbol}", re.escape(symbol)))
    candidates = files.matching(expectation.paths)
    if any(regex.search(files.text(path)) for path in candidates):
        return None
    return candidates or expectation.paths


def run(snapshot: Snapshot, rules: IntegrationRules, context: CheckContext) -> Section:
    if not rules.rules:
        return Section("integration", Status.SKIP, "no integration rules declared")
    relevant = [r for r in rules.rules if snapshot.touches(r.paths)]
    if not relevant:
        return Section(
            "integration", Status.SKIP, "the PR touches no path an integration rule watches"
        )
    files = _Files(snapshot.head)
    findings = []
    checked = 0
    for rule in relevant:
        if rule.kind == "imports":
            for item in new_imports(snapshot, rule):
                checked += 1
                distribution = _normalise(rule.distributions.get(item.symbol, item.symbol))
                for expectation in rule.expect:
                    if distribution in declared_distributions(files, expectation.paths):
                        continue
                    findings.append(
                        _finding(
                            rule,
                            item,
                            expectation,
                            files.matching(expectation.paths) or expectation.paths,
                            distribution,
                        )
                    )
            continue
        for item in new_symbols(snapshot, rule):
            checked += 1
            for expectation in rule.expect:
                missing = missing_for(item.symbol, expectation, files)
                if missing is not None:
                    findings.append(_finding(rule, item, expectation, missing))
    if not findings:
        if not checked:
            return Section("integration", Status.PASS, "nothing new to wire in")
        plural = "s" if checked != 1 else ""
        return Section(
            "integration",
            Status.PASS,
            f"{checked} new name{plural} or import{plural} checked: all wired in",
        )
    by_symbol: dict[str, list[str]] = {}
    for finding in findings:
        by_symbol.setdefault(finding["symbol"], []).append(finding["where"])
    summary = join_limited(
        [f"{symbol} not yet in {', '.join(wheres)}" for symbol, wheres in by_symbol.items()],
        separator="; ",
    )
    return Section("integration", Status.WARN, summary, findings)


def _finding(
    rule: IntegrationRule,
    item: NewSymbol,
    expectation: Expectation,
    missing: list[str],
    distribution: str | None = None,
) -> dict:
    finding = {
        "rule": rule.name,
        "symbol": item.symbol,
        "missing_in": missing[:10],
        "where": expectation.where,
        "introduced_at": f"{item.path}:{item.line}",
        "path": item.path,
        "line": item.line,
    }
    if distribution is not None:
        finding["distribution"] = distribution
    return finding


CHECK = Check(
    name="integration",
    title="Integration checklist",
    run=run,
    rules_model=IntegrationRules,
    order=40,
    template="checks/integration.md.j2",
)
