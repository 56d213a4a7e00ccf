"""What a doc check works from and gives: the tables the extractor expects, one doc's finding.

Kept apart from :mod:`bot.gendocs.doc_check` (the checking itself) so that the finding's
shape, its JSON and the extractor's cache entry are read in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bot.core.sections import Cache
from bot.core.snapshot import TreeReader
from bot.gendocs.attention_sources import extract
from bot.gendocs.config import DocRule
from bot.gendocs.patch import unified_patch
from bot.gendocs.render import render_tables
from bot.gendocs.source import Problem, SourceTree, SplitsProblems
from bot.gendocs.tables import CellDiff


@dataclass
class Expected:
    """What the source says, rendered: every table, plus what could not be read."""

    tables: dict[str, str]
    problems: list[Problem]
    unreadable: list[str]  # backends whose feature rows are unknown
    unreadable_prefill: list[str] = field(default_factory=list)  # prefill rows unknown
    factory_built: list[str] = field(default_factory=list)  # backends with no row of their own

    def to_cache(self) -> str:
        return json.dumps(
            {
                "tables": self.tables,
                "problems": [p.to_json() for p in self.problems],
                "unreadable": self.unreadable,
                "unreadable_prefill": self.unreadable_prefill,
                "factory_built": self.factory_built,
            }
        )

    @classmethod
    def from_cache(cls, text: str) -> Expected:
        data = json.loads(text)
        problems = [
            Problem(p["path"], p["message"], p["line"], p["severity"]) for p in data["problems"]
        ]
        return cls(
            data["tables"],
            problems,
            data["unreadable"],
            data["unreadable_prefill"],
            data["factory_built"],
        )


CACHE_NAMESPACE = "gendocs"
CACHE_VERSION = 3  # raised whenever what is cached changes shape


def expected_tables(
    rule: DocRule, tree: TreeReader, *, split_special: bool = False, cache: Cache | None = None
) -> Expected:
    """Extract the model from ``tree`` and render every table of the rule's template.

    A git revision never changes, so with a ``cache`` its result is kept by commit.
    """
    key = None
    if cache is not None and tree.cache_identity is not None:
        skip = ",".join(sorted(rule.skip_backends))
        options = f"{rule.extractor}:{rule.template}:{skip}:{int(split_special)}"
        key = f"{tree.cache_identity}:{options}:v{CACHE_VERSION}"
        cached = cache.get(CACHE_NAMESPACE, key)
        if cached is not None:
            return Expected.from_cache(cached)
    source = SourceTree(tree)
    model = extract(source, rule.skip_backends)
    tables = render_tables(model, rule.template, split_special=split_special)
    expected = Expected(
        tables, source.problems, model.unreadable, model.unreadable_prefill, model.factory_built
    )
    if key is not None:
        cache.put(CACHE_NAMESPACE, key, expected.to_cache())
    return expected


@dataclass
class DocResult(SplitsProblems):
    """The finding for one doc (JSON: ``{path, in_sync, cells, ...}``)."""

    path: str
    mode: str
    cells: list[CellDiff] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    actual_text: str | None = None
    expected_text: str | None = None  # committed docs: the doc with its tables rewritten
    manual_edits: list[dict[str, Any]] = field(default_factory=list)
    preview: list[dict[str, str]] = field(default_factory=list)
    generator_changed: bool = False
    fix_command: str = ""
    notes: list[str] = field(default_factory=list)
    # Set when the repository's generator judged the doc: how it ran, and where prbot's
    # own extractor disagreed with it (a problem in prbot, logged; never drift).
    generator: dict[str, Any] | None = None
    extractor_disagreements: list[CellDiff] = field(default_factory=list)
    extractor_problems: list[Problem] = field(default_factory=list)
    extractor_cells_compared: int = 0  # the generator's table cells the extractor was held to

    @property
    def in_sync(self) -> bool:
        return not self.cells and not self.errors and not self.manual_edits

    def patch(self) -> str:
        """A unified diff that brings the tables in line (empty when nothing to change)."""
        if self.actual_text is None or self.expected_text is None:
            return ""
        return unified_patch(self.path, self.actual_text, self.expected_text)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "in_sync": self.in_sync,
            "cells": [c.to_json() for c in self.cells],
            "kind": "doc",
            "mode": self.mode,
            "problems": [p.to_json() for p in self.problems],
            "manual_edits": self.manual_edits,
            "preview": self.preview,
            "generator_changed": self.generator_changed,
            "fix_command": self.fix_command,
            "patch": self.patch(),
            "notes": self.notes,
            "generator": self.generator,
            "extractor_disagreements": [c.to_json() for c in self.extractor_disagreements],
            "extractor_problems": [p.to_json() for p in self.extractor_problems],
            "extractor_cells_compared": self.extractor_cells_compared,
        }
