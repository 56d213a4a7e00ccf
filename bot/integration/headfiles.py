"""What one run of the checklist reads and finds: the head's files, each read and parsed
once, and the outcome the rules add their findings to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.core.globs import path_matches
from bot.core.limits import InputRejected
from bot.core.snapshot import TreeReader
from bot.integration.aliases import name_tables
from bot.integration.config import Expectation, IntegrationRule
from bot.integration.entries import file_entries

MAX_MISSING_PATHS = 10


def read_or_note(tree: TreeReader, problems: list[str]) -> Callable[[str], str | None]:
    """``tree.read_text`` that turns a file over the reader's bound into a problem (and no
    text) instead of an exception: one huge file must not cost the whole checklist."""

    def read(path: str) -> str | None:
        try:
            return tree.read_text(path)
        except InputRejected as exc:
            problems.append(str(exc))
            return None

    return read


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
            self._text[path] = read_or_note(self.tree, self.problems)(path) or ""
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
    # (module, distribution, "path:line"): imports declared by an install command.
    installed_by: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def missing(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if not f.get("optional")]


def new_finding(rule: IntegrationRule, where: str, symbol: str, path: str, line: int) -> dict:
    return {
        "rule": rule.name,
        "symbol": symbol,
        "missing_in": [],
        "where": where,
        "introduced_at": f"{path}:{line}",
        "path": path,
        "line": line,
    }


def looked_in(paths: list[str], expectation: Expectation) -> list[str]:
    """The files looked in, or the rule's globs when they are too many to list."""
    return paths if paths and len(paths) <= MAX_MISSING_PATHS else list(expectation.paths)
