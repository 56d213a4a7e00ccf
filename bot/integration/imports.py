"""Imports read with ``ast``: the top-level module, the line, and whether it is guarded.

An import inside ``try: ... except ImportError`` (or ``ModuleNotFoundError``, or a broader
``except``), under ``if importlib.util.find_spec(...)``, or in ``contextlib.suppress(
ImportError)`` is an optional dependency: the code runs without it. One under
``if TYPE_CHECKING`` is for type checkers only. Either way the site says which guard it is.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from bot.integration.entries import dotted
from bot.limits import MAX_AST_NODES, InputRejected, parse_python
from bot.snapshot import TreeReader

_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass(frozen=True)
class ImportSite:
    module: str  # top-level module name: "cutlass" for "import cutlass.cute"
    path: str
    line: int
    guard: str | None = None  # "try/except ImportError", "if TYPE_CHECKING", ...

    @property
    def typing_only(self) -> bool:
        return self.guard == "if TYPE_CHECKING"


def _caught(handler: ast.ExceptHandler) -> str | None:
    """The import error a handler catches (its name), or None when it catches none."""
    if handler.type is None:
        return "bare except"
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for caught in types:
        name = (dotted(caught) or "").rsplit(".", 1)[-1]
        if name in _IMPORT_ERRORS:
            return name
    return None


def _calls(node: ast.AST, name: str) -> bool:
    """Whether ``node`` (a condition) calls a function called ``name``; shallow and bounded."""
    stack, seen = [node], 0
    while stack and seen < 200:
        current = stack.pop()
        seen += 1
        if isinstance(current, ast.Call) and (dotted(current.func) or "").endswith(name):
            return True
        stack.extend(ast.iter_child_nodes(current))
    return False


def _if_guard(test: ast.expr) -> str | None:
    if (dotted(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING":
        return "if TYPE_CHECKING"
    if _calls(test, "find_spec"):
        return "an importlib.util.find_spec check"
    return None


def _with_guard(node: ast.With) -> str | None:
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and (dotted(call.func) or "").endswith("suppress"):
            for arg in call.args:
                name = (dotted(arg) or "").rsplit(".", 1)[-1]
                if name in _IMPORT_ERRORS:
                    return f"contextlib.suppress({name})"
    return None


def imports_in(path: str, text: str) -> list[ImportSite]:
    """Every absolute import in a Python file, with its guard. Relative imports are the
    package's own. Raises :class:`~bot.limits.InputRejected` on a bound or a parse error."""
    tree = parse_python(text, path)
    sites: list[ImportSite] = []
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
    visited = 0
    while stack:
        node, guard = stack.pop()
        visited += 1
        if visited > MAX_AST_NODES:
            raise InputRejected(path, f"has over {MAX_AST_NODES:,} syntax nodes; not read in full")
        if isinstance(node, ast.Import):
            for alias in node.names:
                sites.append(ImportSite(alias.name.split(".")[0], path, node.lineno, guard))
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                sites.append(ImportSite(node.module.split(".")[0], path, node.lineno, guard))
            continue
        if isinstance(node, ast.Try | ast.TryStar):
            caught = next((c for h in node.handlers if (c := _caught(h))), None)
            inner = f"try/except {caught}" if caught else guard
            stack.extend((child, inner) for child in node.body)
            for rest in (node.handlers, node.orelse, node.finalbody):
                stack.extend((child, guard) for child in rest)
            continue
        if isinstance(node, ast.If):
            inner = _if_guard(node.test) or guard
            stack.extend((child, inner) for child in node.body)
            stack.extend((child, guard) for child in node.orelse)
            continue
        if isinstance(node, ast.With):
            inner = _with_guard(node) or guard
            stack.extend((child, inner) for child in node.body)
            continue
        if isinstance(node, ast.expr):
            continue  # no import statement lives inside an expression
        stack.extend((child, guard) for child in ast.iter_child_nodes(node))
    sites.sort(key=lambda site: site.line)
    return sites


def _may_import(text: str, modules: set[str]) -> bool:
    # The module as the first name after "from", or as one of the names after "import".
    names = "|".join(re.escape(m) for m in sorted(modules))
    pattern = (
        rf"(?m)^[ \t]*(?:from[ \t]+(?:{names})\b"
        rf"|import[ \t]+(?:[\w.]+(?:[ \t]+as[ \t]+\w+)?[ \t]*,[ \t]*)*(?:{names})\b)"
    )
    return re.search(pattern, text) is not None


def imported_anywhere(
    tree: TreeReader, paths: Iterable[str], modules: set[str], problems: list[str]
) -> set[str]:
    """Which of ``modules`` some Python file among ``paths`` of ``tree`` imports.

    A file is parsed only when a line of it starting with ``import`` or ``from`` names one
    of the modules, so walking a whole base tree costs one read per file and a parse of the
    few that could matter; ``ast`` has the last word.
    """
    wanted = set(modules)
    found: set[str] = set()
    for path in paths:
        if not wanted:
            break
        text = tree.read_text(path)
        if not text or not _may_import(text, wanted):
            continue
        try:
            hits = {site.module for site in imports_in(path, text)} & wanted
        except InputRejected as exc:
            problems.append(str(exc))
            continue
        found |= hits
        wanted -= hits
    return found
