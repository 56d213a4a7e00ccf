"""Python sources read as syntax trees, never imported: one parse per file, problems kept.

The extractors read a repository revision through a :class:`~bot.core.snapshot.TreeReader`, so
the same code serves a git revision (PR mode) and a working directory (``prbot docs``).
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass, field

from bot.core.limits import InputRejected, parse_python
from bot.core.snapshot import TreeReader

# Fields that hold nested statements (or handlers / match cases that hold statements).
_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


@dataclass(frozen=True)
class Problem:
    """Something the extractor could not read, named by file (and line when known)."""

    path: str
    message: str
    line: int | None = None
    # "error": the doc cannot be verified (a file does not parse, a class is missing).
    # "warning": the source says something no generator can read; the doc shows a default.
    severity: str = "error"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "severity": self.severity,
            "message": self.message,
        }


class SplitsProblems:
    """For results that carry ``problems``: errors make a doc unverifiable, warnings do not."""

    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]


@dataclass
class SourceTree:
    """Parsed Python modules of one revision, cached, with the problems met on the way."""

    reader: TreeReader
    problems: list[Problem] = field(default_factory=list)
    _trees: dict[str, ast.Module | None] = field(default_factory=dict)
    # id(module) -> name -> first definition in breadth-first order; the modules stay
    # alive in _trees, so their ids are stable.
    _classes: dict[int, dict[str, ast.ClassDef]] = field(default_factory=dict)
    _functions: dict[int, dict[str, ast.FunctionDef]] = field(default_factory=dict)
    _imports: dict[int, list[ast.ImportFrom]] = field(default_factory=dict)

    def exists(self, path: str) -> bool:
        return self.read(path) is not None

    def read(self, path: str) -> str | None:
        return self.reader.read_text(path)

    def parse(self, path: str, *, required: bool = True) -> ast.Module | None:
        """The module at ``path``, or None (with a problem when ``required``) if absent or bad."""
        if path in self._trees:
            return self._trees[path]
        text = self.read(path)
        tree: ast.Module | None = None
        if text is None:
            if required:
                self.report(path, "file is missing")
        else:
            try:
                # Bounded in bytes and tokens before the parse (bot/core/limits.py): one 7.9 MB
                # module parsed here unbounded cost a worker 3.1 GB.
                tree = parse_python(text, path)
            except InputRejected as exc:
                # "does not parse (line 3): invalid syntax" -> the problem's line and message.
                found = re.fullmatch(r"does not parse \(line (\d+)\): (.*)", exc.reason)
                if found:
                    self.report(path, f"does not parse: {found[2]}", int(found[1]))
                else:
                    self.report(path, exc.reason)
        self._trees[path] = tree
        return tree

    def find_class(self, tree: ast.Module, name: str) -> ast.ClassDef | None:
        """Like :func:`find_class`, from an index built with one walk per module."""
        if id(tree) not in self._classes:
            self._index(tree)
        return self._classes[id(tree)].get(name)

    def find_function(self, tree: ast.Module, name: str) -> ast.FunctionDef | None:
        if id(tree) not in self._functions:
            self._index(tree)
        return self._functions[id(tree)].get(name)

    def import_froms(self, tree: ast.Module) -> list[ast.ImportFrom]:
        """Every ``from X import ...`` in the module, in breadth-first order."""
        if id(tree) not in self._imports:
            self._index(tree)
        return self._imports[id(tree)]

    def _index(self, tree: ast.Module) -> None:
        # Walks statements only: definitions and imports are statements, and skipping the
        # far more numerous expression nodes makes this several times cheaper than ast.walk.
        classes: dict[str, ast.ClassDef] = {}
        functions: dict[str, ast.FunctionDef] = {}
        imports: list[ast.ImportFrom] = []
        queue: deque[ast.AST] = deque(tree.body)
        while queue:
            node = queue.popleft()
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, node)
            elif isinstance(node, ast.FunctionDef):
                functions.setdefault(node.name, node)
            elif isinstance(node, ast.ImportFrom):
                imports.append(node)
            for name in _STATEMENT_FIELDS:
                children = getattr(node, name, None)
                if children:
                    queue.extend(children)
        self._classes[id(tree)] = classes
        self._functions[id(tree)] = functions
        self._imports[id(tree)] = imports

    def report(
        self, path: str, message: str, line: int | None = None, severity: str = "error"
    ) -> None:
        problem = Problem(path, message, line, severity)
        if problem not in self.problems:
            self.problems.append(problem)

    def warn(self, path: str, message: str, line: int | None = None) -> None:
        self.report(path, message, line, severity="warning")


def module_path(dotted: str) -> str:
    """``vllm.v1.foo`` -> ``vllm/v1/foo.py``."""
    return dotted.replace(".", "/") + ".py"


def class_path_file(class_path: str) -> tuple[str, str]:
    """``pkg.mod.Class`` -> (``pkg/mod.py``, ``Class``)."""
    module, _, name = class_path.rpartition(".")
    return module_path(module), name


def find_class(tree: ast.AST, name: str) -> ast.ClassDef | None:
    """The first class called ``name`` anywhere in the tree, in breadth-first order."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def find_function(tree: ast.AST, name: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def class_method(node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    """A method defined directly in the class body (inherited ones are not looked up)."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == name:
            return item
    return None


def first_base_name(node: ast.ClassDef) -> str | None:
    """The simple name of the first base class (``Base`` or ``Base[T]``)."""
    if not node.bases:
        return None
    base = node.bases[0]
    if isinstance(base, ast.Subscript):
        base = base.value
    return base.id if isinstance(base, ast.Name) else None


def enum_members(node: ast.ClassDef) -> dict[str, str]:
    """Members of an Enum class whose value is a non-empty string constant, in order."""
    members: dict[str, str] = {}
    for item in node.body:
        if not isinstance(item, ast.Assign):
            continue
        value = item.value
        if not (isinstance(value, ast.Constant) and value.value):
            continue
        for target in item.targets:
            if isinstance(target, ast.Name):
                members[target.id] = value.value
    return members


def is_major_compare(node: ast.AST) -> bool:
    """``<something>.major <op> <constant>``."""
    return (
        isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr == "major"
        and bool(node.comparators)
        and isinstance(node.comparators[0], ast.Constant)
    )


def attribute_names(elements: list[ast.expr]) -> list[str]:
    """``[Enum.A, Enum.B]`` -> ``["A", "B"]``; other elements are skipped."""
    return [e.attr for e in elements if isinstance(e, ast.Attribute)]


def source_line(text: str | None, node: ast.AST) -> str:
    """The source text of a node, shortened, for messages."""
    if text is None:
        return ""
    segment = ast.get_source_segment(text, node) or ""
    segment = " ".join(segment.split())
    return segment if len(segment) <= 80 else segment[:77] + "..."
