"""literal-dimensions: a capability check that pins one model's dimensions to literals.

``supports_combination`` comparing ``qk_nope_head_dim == 128``, ``qk_rope_head_dim == 64``
and ``v_head_dim == 128`` accepts DeepSeek-R1-shaped models only: every other MLA model is
refused (vLLM's check functions return the reason, so the refusal is not silent, but the
pinned shape is worth a reviewer's question). A single pinned dimension or a set of allowed
values (``in (64, 128)``) is how kernels state what they support, so a flag needs several
dimensions pinned to single literals in one check function.
"""

from __future__ import annotations

import ast

from bot.review.config import LiteralDimensionRules
from bot.review.source import (
    Flag,
    FunctionNode,
    ReviewedFile,
    identifier,
    is_reason,
    name_matches,
)

PATTERN = "literal-dimensions"


def _int_literals(node: ast.AST) -> list[int] | None:
    """The int (or tuple of ints) a comparison side is, else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List) and node.elts:
        values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(values) == len(node.elts) and all(type(v) is int for v in values):
            return values
    return None


def _aliases(assignments: list[ast.Assign], dimensions: set[str]) -> dict[str, list[str]]:
    """Local names bound to dimensions: ``dims = (hf.kv_lora_rank, hf.qk_rope_head_dim)``."""
    out: dict[str, list[str]] = {}
    for node in assignments:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        target = node.targets[0].id
        if isinstance(node.value, ast.Tuple):
            named = [identifier(e) for e in node.value.elts]
            if named and all(n in dimensions for n in named):
                out[target] = [n for n in named if n]
        elif identifier(node.value) in dimensions:
            out[target] = [identifier(node.value) or ""]
    return out


def _pinned(
    compare: ast.Compare, dimensions: set[str], aliases: dict[str, list[str]], ignore: set[int]
) -> dict[str, int]:
    """Dimension -> literal for ``dim == N`` / ``dim != N`` / ``(a, b) != (N, M)``."""
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq | ast.NotEq):
        return {}
    sides = [compare.left, compare.comparators[0]]
    for named_side, literal_side in (sides, sides[::-1]):
        values = _int_literals(literal_side)
        if values is None:
            continue
        if isinstance(named_side, ast.Tuple):
            names = [identifier(e) for e in named_side.elts]
        else:
            name = identifier(named_side)
            names = aliases.get(name or "") or [name]
        if len(names) != len(values):
            continue
        return {
            n: v for n, v in zip(names, values, strict=True) if n in dimensions and v not in ignore
        }
    return {}


def _returns_reason(reviewed: ReviewedFile, function: FunctionNode) -> bool:
    """The check function returns a message somewhere (vLLM's ``str | None`` checks)."""
    return any(
        isinstance(node, ast.Return) and is_reason(node.value)
        for node in reviewed.descendants(function)
    )


def find(reviewed: ReviewedFile, rules: LiteralDimensionRules) -> list[Flag]:
    dimensions = set(rules.dimensions)
    ignore = set(rules.ignore_values)
    compares: dict[FunctionNode, list[ast.Compare]] = {}
    for compare in reviewed.nodes(ast.Compare):
        function = reviewed.function_of(compare)
        if function is not None and name_matches(function.name, rules.check_functions):
            compares.setdefault(function, []).append(compare)
    assignments: dict[FunctionNode, list[ast.Assign]] = {}
    for node in reviewed.nodes(ast.Assign):
        function = reviewed.function_of(node)
        if function in compares:
            assignments.setdefault(function, []).append(node)
    flags = []
    for function, candidates in compares.items():
        aliases = _aliases(assignments.get(function, []), dimensions)
        pinned_all: dict[str, int] = {}
        lines = []
        for compare in candidates:
            pinned = _pinned(compare, dimensions, aliases, ignore)
            if pinned:
                pinned_all.update(pinned)
                lines.append(compare.lineno)
        if len(pinned_all) < rules.min_pinned:
            continue
        shape = ", ".join(f"{name}={value}" for name, value in sorted(pinned_all.items()))
        # "Here": the pin may sit on one branch (no-rope MLA only), so nothing is claimed
        # about the models another branch accepts.
        refusal = (
            "a model whose values differ is refused here, with the reason it returns"
            if _returns_reason(reviewed, function)
            else "a model whose values differ is refused here"
        )
        why = f"{function.name} pins {shape}: one model's shape; {refusal}"
        flag = reviewed.flag(PATTERN, reviewed.first_changed(lines), why)
        if flag:
            flags.append(flag)
    return flags
