"""The backends a platform picks today for a machine, read from its priority function with
``ast`` (never imported): what a backend new in the PR is benchmarked against.

A benchmark of a backend that does not exist at the merge base cannot be a base-versus-head
run; it compares the new backend with the incumbents on the same head. vLLM's CUDA platform
orders its backends in ``_get_backend_priorities(use_mla, device_capability, ...)``: under
``if use_mla:`` a branch ``if device_capability.major == 10:`` returns the list for B200s.
The list's entries (``AttentionBackendEnum.X``) in order are the priority; the incumbents are
those it puts ahead of the new backend, the ones the platform picks over it today, or its
first two when the new backend is not listed first.

A splat is read as far as the branch says: ``*sparse_backends`` is the list that name is
assigned in that branch (vLLM 0.33.0 assigns it in three if-branches, by KV-cache dtype and
head count: the one that names the new backend is the order that backend competes in, else
the first), and ``*([X] if cond else [])`` is ``X`` only when it names a preferred backend.
A name the branch also changes in place (``.insert``, ``.append``, ``+=``) is left out: its
order depends on more than the source shows.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from bot.core.limits import InputRejected, parse_python, walk

MAX_INCUMBENTS = 2


def _mentions(test: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(test))


def _major_is(test: ast.expr, major: int) -> bool:
    """``device_capability.major == 10`` (either side)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    attribute = any(isinstance(s, ast.Attribute) and s.attr == "major" for s in sides)
    literal = any(isinstance(s, ast.Constant) and s.value == major for s in sides)
    return attribute and literal


def _member(node: ast.expr, enum: str) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == enum else None
    return None


def _plain(value: ast.expr | None, enum: str) -> list[str]:
    """The members a list literal names directly, splats left out."""
    if not isinstance(value, ast.List):
        return []
    return [name for e in value.elts if (name := _member(e, enum))]


def _assigned(body: list[ast.stmt], enum: str) -> tuple[dict[str, list[list[str]]], set[str]]:
    """Per local name, the list literals assigned to it in ``body`` (source order), and the
    names changed in place there."""
    lists: dict[str, list[list[str]]] = {}
    changed: set[str] = set()
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    lists.setdefault(target.id, []).append(_plain(node.value, enum))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            changed.add(node.target.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            changed.add(node.func.value.id)
    return lists, changed


def _entries(
    value: ast.expr | None, enum: str, body: list[ast.stmt], prefer: frozenset[str]
) -> list[str]:
    if not isinstance(value, ast.List):
        return []
    lists, changed = _assigned(body, enum)
    names: list[str] = []
    for element in value.elts:
        if name := _member(element, enum):
            names.append(name)
        elif isinstance(element, ast.Starred):
            inner = element.value
            if isinstance(inner, ast.Name) and inner.id in lists and inner.id not in changed:
                options = lists[inner.id]
                names += next((o for o in options if prefer & set(o)), options[0])
            elif isinstance(inner, ast.IfExp):
                when = _plain(inner.body, enum)
                if prefer & set(when):
                    names += when
    return list(dict.fromkeys(names))


def priority_list(
    source: str,
    path: str,
    *,
    function: str,
    flag: str,
    major: int,
    enum: str,
    prefer: Iterable[str] = (),
) -> list[str] | None:
    """The ordered backend names the ``flag`` branch returns for capability ``major``, or
    None when the function or that branch is not there (or the file does not parse).
    ``prefer``: the backends whose order is wanted, for splats with several assignments."""
    preferred = frozenset(prefer)
    try:
        tree = parse_python(source, path)
        for node in walk(tree, path):
            if not (isinstance(node, ast.FunctionDef) and node.name == function):
                continue
            for branch in ast.walk(node):
                if not (isinstance(branch, ast.If) and _mentions(branch.test, flag)):
                    continue
                for inner in ast.walk(ast.Module(body=branch.body, type_ignores=[])):
                    if isinstance(inner, ast.If) and _major_is(inner.test, major):
                        for statement in ast.walk(ast.Module(body=inner.body, type_ignores=[])):
                            if isinstance(statement, ast.Return):
                                names = _entries(statement.value, enum, inner.body, preferred)
                                if names:
                                    return names
    except (InputRejected, RecursionError):
        return None
    return None


def incumbents(priority: list[str], new: Iterable[str]) -> list[str]:
    """What the new backends are measured against: the entries the list puts ahead of the
    first new one, else (new ones first or unlisted) the first two that are not new."""
    fresh = set(new)
    listed = [i for i, name in enumerate(priority) if name in fresh]
    old = [name for name in priority if name not in fresh]
    if listed and listed[0] > 0:
        return priority[: listed[0]][:MAX_INCUMBENTS]
    return old[:MAX_INCUMBENTS]
