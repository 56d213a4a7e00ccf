"""New names a PR adds where a symbol rule watches (members of a registry enum)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from bot.core.globs import path_matches
from bot.core.limits import InputRejected, parse_python, walk
from bot.core.snapshot import Snapshot
from bot.integration.config import IntegrationRule


@dataclass(frozen=True)
class NewSymbol:
    symbol: str
    path: str
    line: int
    # What the registry entry points to ("pkg.module.Class"), when it is a string.
    target: str | None = None

    @property
    def class_name(self) -> str | None:
        return self.target.rsplit(".", 1)[-1] if self.target else None


def assigned_names(path: str, text: str) -> dict[str, str | None]:
    """Names assigned in a Python file, each with the first string its value holds."""
    names: dict[str, str | None] = {}
    for node in walk(parse_python(text, path), path):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id not in names:
                names[target.id] = _first_string(value)
    return names


def _first_string(value: ast.AST) -> str | None:
    # Registry values are "pkg.mod.Class", ("pkg.mod." "Class") or a call around one.
    for node in walk(value, "<value>", limit=1000):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
    return None


def new_symbols(
    snapshot: Snapshot, rule: IntegrationRule, problems: list[str] | None = None
) -> list[NewSymbol]:
    """Names the PR adds on lines matching ``rule.added`` that were not defined at base.

    In Python files "defined" means assigned (so a name a base comment mentions is still
    new); files that do not parse fall back to a whole-word search of the base text.
    """
    pattern = re.compile(rule.added or "")
    found: dict[str, NewSymbol] = {}
    for changed in snapshot.files:
        if not any(path_matches(changed.path, p) for p in rule.paths):
            continue
        candidates = []
        # A watched file over the reader's bound raises: the section is an error naming it
        # (tests/test_snapshot.py), since nothing can be said about the names it adds.
        for line_number, text in changed.added_lines():
            match = pattern.search(text)
            if match and match.group(1) and match.group(1) not in found:
                candidates.append((match.group(1), line_number))
        if not candidates:
            continue
        before = snapshot.base.read_text(changed.previous_path or changed.path) or ""
        after = snapshot.head.read_text(changed.path) or ""
        at_base = at_head = None
        if changed.path.endswith(".py"):
            try:
                at_base = assigned_names(changed.path, before)
                at_head = assigned_names(changed.path, after)
            except InputRejected as exc:
                if problems is not None:
                    problems.append(str(exc))
                at_base = at_head = None
        for name, line_number in candidates:
            if name in found:
                continue
            if at_base is not None:
                if name in at_base:
                    continue  # moved or reformatted, not new
                target = (at_head or {}).get(name)
            elif re.search(rf"\b{re.escape(name)}\b", before):
                continue
            else:
                target = None
            found[name] = NewSymbol(name, changed.path, line_number, target)
    return list(found.values())
