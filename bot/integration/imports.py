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

from bot.core.limits import MAX_AST_NODES, InputRejected, parse_python
from bot.core.snapshot import TreeReader
from bot.integration.entries import dotted

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


# mypy's and pyright's "this module may not be installed": the author knows it is optional.
_NOT_INSTALLED_MARKERS = ("type: ignore[import-not-found]", "pyright: ignore[reportMissingImports]")


def _marked_not_installed(lines: list[str], node: ast.stmt) -> bool:
    end = getattr(node, "end_lineno", None) or node.lineno
    return any(
        marker in lines[number - 1]
        for number in range(node.lineno, min(end, len(lines)) + 1)
        for marker in _NOT_INSTALLED_MARKERS
    )


def _availability_check(node: ast.stmt) -> bool:
    """``spec = importlib.util.find_spec("x")`` or ``if not has_x(): raise``: a statement
    after which the rest of the block runs only when the module is there."""
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        return _calls(node.value, "find_spec")
    if isinstance(node, ast.If) and node.body:
        last = node.body[-1]
        exits = isinstance(last, ast.Raise | ast.Return) or (
            isinstance(last, ast.Expr) and _calls(last, "exit")
        )
        return exits and (_calls(node.test, "find_spec") or _calls_has(node.test))
    return False


def _calls_has(node: ast.AST) -> bool:
    stack, seen = [node], 0
    while stack and seen < 200:
        current = stack.pop()
        seen += 1
        if isinstance(current, ast.Call):
            name = (dotted(current.func) or "").rsplit(".", 1)[-1]
            if name.startswith("has_") or (name.startswith("is_") and name.endswith("_available")):
                return True
        stack.extend(ast.iter_child_nodes(current))
    return False


def _block(statements: list[ast.stmt], guard: str | None) -> list[tuple[ast.AST, str | None]]:
    """A statement list, each statement with its guard: after an availability check the
    rest of the block is guarded by it."""
    out: list[tuple[ast.AST, str | None]] = []
    for statement in statements:
        out.append((statement, guard))
        if guard is None and _availability_check(statement):
            guard = "an availability check (find_spec / has_*)"
    return out


def imports_in(path: str, text: str) -> list[ImportSite]:
    """Every absolute import in a Python file, with its guard. Relative imports are the
    package's own. Raises :class:`~bot.core.limits.InputRejected` on a bound or a parse error."""
    tree = parse_python(text, path)
    lines = text.splitlines()
    sites: list[ImportSite] = []
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
    visited = 0
    while stack:
        node, guard = stack.pop()
        visited += 1
        if visited > MAX_AST_NODES:
            raise InputRejected(path, f"has over {MAX_AST_NODES:,} syntax nodes; not read in full")
        if isinstance(node, ast.Import | ast.ImportFrom):
            if guard is None and _marked_not_installed(lines, node):
                guard = "a `type: ignore[import-not-found]` mark"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    sites.append(ImportSite(alias.name.split(".")[0], path, node.lineno, guard))
            elif node.level == 0 and node.module:
                sites.append(ImportSite(node.module.split(".")[0], path, node.lineno, guard))
            continue
        if isinstance(node, ast.Try | ast.TryStar):
            caught = next((c for h in node.handlers if (c := _caught(h))), None)
            inner = f"try/except {caught}" if caught else guard
            stack.extend(_block(node.body, inner))
            stack.extend((handler, guard) for handler in node.handlers)
            stack.extend(_block(node.orelse, guard) + _block(node.finalbody, guard))
            continue
        if isinstance(node, ast.If):
            inner = _if_guard(node.test) or guard
            stack.extend(_block(node.body, inner) + _block(node.orelse, guard))
            continue
        if isinstance(node, ast.With):
            inner = _with_guard(node) or guard
            stack.extend(_block(node.body, inner))
            continue
        if isinstance(node, ast.expr):
            continue  # no import statement lives inside an expression
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                stack.extend(_block(value, guard))
            elif isinstance(value, list):
                stack.extend((child, guard) for child in value if isinstance(child, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append((value, guard))
    sites.sort(key=lambda site: site.line)
    return sites


def top_level_imports(path: str, text: str) -> list[str]:
    """The modules a file imports in its own top-level statements: what it needs to load
    at all. Raises :class:`~bot.core.limits.InputRejected`."""
    modules = []
    for node in parse_python(text, path).body:
        if isinstance(node, ast.Import):
            modules += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.append(node.module.split(".")[0])
    return modules


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
        try:
            text = tree.read_text(path)
        except InputRejected as exc:  # over the reader's bound: named, not guessed at
            problems.append(str(exc))
            continue
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
