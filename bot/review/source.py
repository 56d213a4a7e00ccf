"""One head file as the review patterns read it: its AST, scopes, changed lines and waivers.

The tree comes from :func:`bot.core.limits.parse_python` and is walked once, iteratively and
bounded, to record each node's enclosing function and class. Patterns then look at nodes
by type, never recursing themselves, so deep or enormous code costs one bounded pass.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from bot.core.limits import InputRejected, parse_python, walk

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# "# prbot: ignore[lazy-cache]" or "# prbot: ignore[lazy-cache, unbounded-cache]".
_WAIVER = re.compile(r"#\s*prbot:\s*ignore\[([a-z0-9_,\s-]+)\]")
MAX_SNIPPET_CHARS = 160


def waiver_marker(pattern: str) -> str:
    return f"# prbot: ignore[{pattern}]"


@dataclass(frozen=True)
class Flag:
    """One review point: which pattern, where (head line), and why in one line."""

    pattern: str
    path: str
    line: int
    snippet: str
    why: str

    def to_finding(self) -> dict:
        finding = {
            "pattern": self.pattern,
            "path": self.path,
            "line": self.line,
            "snippet": self.snippet,
            "why": self.why,
        }
        if self.line:
            finding["introduced_at"] = f"{self.path}:{self.line}"
        if self.snippet:  # a review point, not a file that could not be read
            finding["rule"] = f"checks.review.{self.pattern.replace('-', '_')}"
            finding["waiver"] = waiver_marker(self.pattern)
        return finding


@dataclass
class ReviewedFile:
    path: str
    tree: ast.Module
    lines: list[str]
    added: frozenset[int]
    # node -> (enclosing function, enclosing class), both None at module level.
    scope: dict[ast.AST, tuple[FunctionNode | None, ast.ClassDef | None]] = field(
        default_factory=dict
    )
    by_type: dict[type, list[ast.AST]] = field(default_factory=dict)
    # Nodes the patterns may still visit below chosen nodes (if bodies, handlers): a bound on
    # re-walks, so nesting cannot make the review quadratic.
    budget: int = 0
    # assignment target -> assigned value, for the patterns that care what is stored
    _assigned: dict[ast.AST, ast.AST] = field(default_factory=dict)

    @classmethod
    def parse(cls, path: str, source: str, added: Iterable[int], *, max_nodes: int) -> ReviewedFile:
        """Parse and index ``source``; raises :class:`bot.core.limits.InputRejected` on bad
        input."""
        tree = parse_python(source, path)
        reviewed = cls(path, tree, source.splitlines(), frozenset(added), budget=4 * max_nodes)
        reviewed._index(max_nodes)
        return reviewed

    def _index(self, max_nodes: int) -> None:
        """One iterative pass: each node's type and enclosing function and class.

        The same bound as :func:`bot.core.limits.walk`, written out so a node's children are
        listed once (they carry the scope down); ``Load``/``Store`` markers are shared
        singletons with nothing to say and are skipped.
        """
        scope, by_type = self.scope, self.by_type
        stack: list[tuple[ast.AST, FunctionNode | None, ast.ClassDef | None]] = [
            (self.tree, None, None)
        ]
        seen = 0
        while stack:
            node, function, klass = stack.pop()
            seen += 1
            if seen > max_nodes:
                raise InputRejected(self.path, f"has over {max_nodes:,} syntax nodes; not reviewed")
            scope[node] = (function, klass)
            by_type.setdefault(type(node), []).append(node)
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._assigned[target] = node.value
            if isinstance(node, FunctionNode):
                function = node
            elif isinstance(node, ast.ClassDef):
                function, klass = None, node
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, ast.expr_context):
                    stack.append((child, function, klass))

    def nodes(self, *types: type) -> list:
        out: list = []
        for node_type in types:
            out.extend(self.by_type.get(node_type, []))
        out.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        return out

    def stored_value(self, target: ast.AST) -> ast.AST | None:
        """The value assigned to ``target`` (an assignment target), when indexed."""
        return self._assigned.get(target)

    def function_of(self, node: ast.AST) -> FunctionNode | None:
        return self.scope.get(node, (None, None))[0]

    def class_of(self, node: ast.AST) -> ast.ClassDef | None:
        return self.scope.get(node, (None, None))[1]

    def descendants(self, node: ast.AST) -> list[ast.AST]:
        """Nodes under ``node`` (itself included), through the bounded walk.

        Raises :class:`bot.core.limits.InputRejected` once the file's re-walk budget is spent.
        """
        found = list(walk(node, self.path, limit=max(self.budget, 0)))
        self.budget -= len(found)
        return found

    def is_changed(self, line: int | None) -> bool:
        return line is not None and line in self.added

    def first_changed(self, candidates: Iterable[int | None]) -> int | None:
        """The first candidate line the PR added or changed, or None when it touched none."""
        for line in candidates:
            if self.is_changed(line):
                return line
        return None

    def snippet(self, line: int) -> str:
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return text if len(text) <= MAX_SNIPPET_CHARS else text[: MAX_SNIPPET_CHARS - 1] + "…"

    def waived(self, line: int, pattern: str) -> bool:
        if not 0 < line <= len(self.lines):
            return False
        match = _WAIVER.search(self.lines[line - 1])
        if not match:
            return False
        return pattern in {p.strip() for p in match.group(1).split(",")}

    def flag(self, pattern: str, line: int | None, why: str) -> Flag | None:
        """A flag at ``line`` unless the line is unchanged or carries the waiver."""
        if line is None or not self.is_changed(line) or self.waived(line, pattern):
            return None
        return Flag(pattern, self.path, line, self.snippet(line), why)


# A backend's classes share a stem: TokenspeedMLABackend, TokenspeedMLAImpl,
# TokenspeedMLAMetadataBuilder. Capabilities declared on one bind the others.
_ROLE_SUFFIX = re.compile(r"(Backend|Impl|Implementation|MetadataBuilder|Metadata|Builder|Method)$")


def related_classes(first: ast.ClassDef | None, second: ast.ClassDef | None) -> bool:
    if first is None or second is None:
        return False
    if first is second:
        return True
    stem = _ROLE_SUFFIX.sub("", first.name)
    return bool(stem) and stem == _ROLE_SUFFIX.sub("", second.name)


def name_matches(name: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def identifier(node: ast.AST) -> str | None:
    """The last identifier of a name, attribute or ``getattr(x, "name", ...)`` expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def self_attribute(node: ast.AST) -> str | None:
    """``X`` for ``self.X`` (or ``cls.X``), else None."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("self", "cls")
    ):
        return node.attr
    return None


def parameters(function: FunctionNode) -> list[str]:
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def is_reason(value: ast.AST | None) -> bool:
    """A returned value that tells the caller why: a message string (plain, f-string,
    concatenated or formatted), or a tuple carrying one."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and bool(value.value.strip())
    if isinstance(value, ast.JoinedStr):
        return True
    if isinstance(value, ast.BinOp):
        return is_reason(value.left) or is_reason(value.right)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return value.func.attr == "format" and is_reason(value.func.value)
    if isinstance(value, ast.Tuple | ast.List):
        return any(is_reason(element) for element in value.elts)
    return False
