"""The GPUs a backend runs on, read from its ``supports_compute_capability`` (never imported).

vLLM's backends declare their hardware in one classmethod, almost always a single return of
a comparison on the capability: ``capability.major == 10``, ``capability.major in [9, 10]``,
``capability >= DeviceCapability(8, 0)``, ``(capability.major, capability.minor) in ((12, 0),
(12, 1))``. Rather than pattern-match those shapes, the returned expression is *evaluated*
for every capability the rules know (8.0 → a100, 9.0 → h100, 10.0 → b200, …) by a small
interpreter that understands comparisons, tuples, containers, ``and``/``or``/``not`` and
``is not None``. Anything else (a call into the platform, an ``if`` chain) makes the answer
unknown, and unknown never narrows the choice of machines.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.core.limits import InputRejected, parse_python, walk

METHOD = "supports_compute_capability"

_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class Unknown(Exception):
    """The expression uses something the interpreter does not model."""


@dataclass(frozen=True)
class Capability:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Capability:
        major, _, minor = str(text).partition(".")
        return cls(int(major), int(minor or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


def _evaluate(node: ast.expr, name: str, cap: Capability) -> object:
    """The value of ``node`` when the parameter ``name`` is the capability ``cap``."""
    as_tuple = (cap.major, cap.minor)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool | int | type(None)):
            return node.value
        raise Unknown(f"constant {node.value!r}")
    if isinstance(node, ast.Name):
        if node.id == name:
            return as_tuple  # DeviceCapability is a NamedTuple(major, minor)
        raise Unknown(f"name {node.id}")
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == name and node.attr in ("major", "minor"):
            return getattr(cap, node.attr)
        raise Unknown(f"attribute {node.attr}")
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "DeviceCapability" and not node.keywords:
            values = [_evaluate(arg, name, cap) for arg in node.args]
            if len(values) == 2 and all(isinstance(v, int) for v in values):
                return tuple(values)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "to_int"
            and isinstance(func.value, ast.Name)
            and func.value.id == name
            and not node.args
        ):
            return cap.major * 10 + cap.minor
        raise Unknown("call")
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return tuple(_evaluate(element, name, cap) for element in node.elts)
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(value, name, cap) for value in node.values)
        if isinstance(node.op, ast.And):
            return all(bool(v) for v in values)
        return any(bool(v) for v in values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _evaluate(node.operand, name, cap)
    if isinstance(node, ast.Compare):
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.Is | ast.IsNot):
                if not (isinstance(right, ast.Constant) and right.value is None):
                    raise Unknown("is")
                # The parameter is a capability here, never None.
                is_none = _evaluate(left, name, cap) is None
                if is_none != isinstance(op, ast.Is):
                    return False
            else:
                a, b = _evaluate(left, name, cap), _evaluate(right, name, cap)
                try:
                    if not _COMPARE[type(op)](a, b):
                        return False
                except TypeError:
                    raise Unknown("comparison of unlike values") from None
            left = right
        return True
    raise Unknown(type(node).__name__)


def _returned_expression(function: ast.FunctionDef) -> ast.expr | None:
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def _parameter(function: ast.FunctionDef) -> str | None:
    names = [arg.arg for arg in function.args.args]
    if names and names[0] in ("cls", "self"):
        names = names[1:]
    return names[0] if len(names) == 1 else None


def supported_capabilities(
    function: ast.FunctionDef, known: Sequence[Capability]
) -> frozenset[Capability] | None:
    """Which of ``known`` the method accepts, or None when it cannot be told statically."""
    expression, name = _returned_expression(function), _parameter(function)
    if expression is None or name is None:
        return None
    try:
        return frozenset(cap for cap in known if _evaluate(expression, name, cap))
    except Unknown:
        return None


@dataclass(frozen=True)
class BackendHardware:
    """One class's declared hardware: the capabilities it accepts, and where it says so."""

    class_name: str
    path: str
    line: int
    capabilities: frozenset[Capability]

    def describe(self) -> str:
        majors = sorted({cap.major for cap in self.capabilities})
        if not majors:
            return f"{self.class_name} runs on none of the known GPUs"
        return f"{self.class_name} runs only on compute capability " + ", ".join(
            f"{major}.x" for major in majors
        )


def backend_hardware(
    source: str, path: str, known: Iterable[Capability]
) -> tuple[list[BackendHardware], list[str]]:
    """Every class in ``source`` whose ``supports_compute_capability`` narrows the GPUs.

    Returns the classes and problems (a file that does not parse is a problem, not a crash).
    A class that accepts every known capability is left out: it narrows nothing.
    """
    known = list(known)
    try:
        tree = parse_python(source, path)
        found = []
        for node in walk(tree, path):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == METHOD:
                    accepted = supported_capabilities(item, known)
                    if accepted is not None and accepted != frozenset(known):
                        found.append(BackendHardware(node.name, path, item.lineno, accepted))
    except InputRejected as exc:
        return [], [str(exc)]
    return sorted(found, key=lambda hw: hw.line), []


def class_capabilities(
    source: str, path: str, known: Iterable[Capability]
) -> tuple[dict[str, frozenset[Capability] | None], list[str]]:
    """Every class in ``source``: the known capabilities it accepts, or None when it declares
    nothing that can be read (its own ``supports_compute_capability``, else one a base class
    in the same file declares)."""
    known = list(known)
    try:
        tree = parse_python(source, path)
        classes = {n.name: n for n in walk(tree, path) if isinstance(n, ast.ClassDef)}
    except InputRejected as exc:
        return {}, [str(exc)]

    def own(node: ast.ClassDef) -> frozenset[Capability] | None:
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == METHOD:
                return supported_capabilities(item, known)
        return None

    found: dict[str, frozenset[Capability] | None] = {}
    for name, node in classes.items():
        seen, current, accepted = set(), node, None
        while current is not None and current.name not in seen:
            seen.add(current.name)
            accepted = own(current)
            if accepted is not None:
                break
            bases = [b.id for b in current.bases if isinstance(b, ast.Name) and b.id in classes]
            current = classes[bases[0]] if bases else None
        found[name] = accepted
    return found, []
