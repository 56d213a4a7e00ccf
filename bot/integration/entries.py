"""The real entries of a file, by kind: what an expectation may match, never a comment.

A backend named only in a comment (``#   CuTe DSL: tokenspeed``) is not configured, so the
checklist matches entries, not text: in Python the names, attribute chains (``Enum.X``),
definitions and strings other than docstrings; in YAML and JSON the keys and scalar values;
elsewhere the lines that are not comments. Every parse is bounded (``bot.core.limits``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

import yaml

from bot.core.bounded_yaml import YamlRejected, load_bounded
from bot.core.limits import (
    MAX_AST_NODES,
    MAX_YAML_BYTES,
    InputRejected,
    check_size,
    parse_python,
    walk,
)

_YAML_SUFFIXES = (".yaml", ".yml", ".json")
_LINE_COMMENTS = ("#", "//")


def file_entries(path: str, text: str) -> frozenset[str]:
    """Every entry of ``text`` read as the kind of file ``path`` names.

    Raises :class:`~bot.core.limits.InputRejected` when the file is too big or does not parse.
    """
    if path.endswith((".py", ".pyi")):
        return frozenset(python_entries(path, text))
    if path.endswith(_YAML_SUFFIXES):
        return frozenset(yaml_entries(path, text))
    return frozenset(
        stripped
        for line in text.splitlines()
        if (stripped := line.strip()) and not stripped.startswith(_LINE_COMMENTS)
    )


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def python_entries(path: str, text: str) -> Iterator[str]:
    tree = parse_python(text, path)
    docstrings: set[int] = set()
    # walk() is depth first with parents before children, so a bare string statement is
    # marked before its constant is reached.
    for node in walk(tree, path):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield node.value
        elif isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            chain = dotted(node)
            yield chain if chain is not None else node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.alias):
            yield node.asname or node.name
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg


def load_yaml(path: str, text: str) -> Any:
    """``yaml.safe_load`` with the size, alias and depth bounds, every failure one finding."""
    check_size(path, text, MAX_YAML_BYTES, "YAML")
    try:
        return load_bounded(text)[0]
    except YamlRejected as exc:
        raise InputRejected(path, f"is not read: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InputRejected(path, f"does not parse as YAML{where}") from None
    except (RecursionError, MemoryError):
        raise InputRejected(path, "is nested too deeply to parse") from None


def yaml_entries(path: str, text: str) -> Iterator[str]:
    """Keys and scalar values, each shared node once (anchors and aliases cannot multiply)."""
    stack = [load_yaml(path, text)]
    seen: set[int] = set()
    visited = 0
    while stack:
        value = stack.pop()
        visited += 1
        if visited > MAX_AST_NODES:
            raise InputRejected(path, f"has over {MAX_AST_NODES:,} YAML nodes; not read in full")
        if isinstance(value, dict | list):
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, dict):
                for key, item in value.items():
                    if key is not None:
                        yield str(key)
                    stack.append(item)
            else:
                stack.extend(value)
        elif value is not None:
            yield str(value)
