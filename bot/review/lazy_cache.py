"""lazy-cache: a value computed on the first call of a hot method and kept for good.

``if self.x is None: self.x = f(arg)`` inside ``forward`` freezes whatever the first call
passed in. The first call is often the profiling or warm-up run with placeholder inputs
(vLLM's dummy run, scales before weights load), so the kept value can be wrong for every
real request. Only values derived from the call's own arguments are flagged: a lazy buffer
sized from ``self`` fields or allocated on ``q.device`` is ordinary.
"""

from __future__ import annotations

import ast

from bot.review.config import LazyCacheRules
from bot.review.source import Flag, ReviewedFile, name_matches, parameters, self_attribute

PATTERN = "lazy-cache"


def _unset_attribute(test: ast.AST) -> str | None:
    """``X`` when ``test`` only asks whether ``self.X`` is still unset, else None.

    A test that also re-checks the cached value (``or self.buf.shape[0] < n``) re-validates
    it on every call: that is a growing buffer, not a value frozen by the first call.
    """
    if isinstance(test, ast.BoolOp):
        found = [_unset_single(value) for value in test.values]
        return found[0] if all(found) else None
    return _unset_single(test)


def _unset_single(test: ast.AST) -> str | None:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        right = test.comparators[0]
        if isinstance(test.ops[0], ast.Is) and isinstance(right, ast.Constant):
            if right.value is None:
                return self_attribute(test.left) or _getattr_self(test.left)
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operand = test.operand
        if isinstance(operand, ast.Call) and isinstance(operand.func, ast.Name):
            if operand.func.id == "hasattr" and len(operand.args) == 2:
                target, name = operand.args
                if isinstance(target, ast.Name) and target.id in ("self", "cls"):
                    if isinstance(name, ast.Constant) and isinstance(name.value, str):
                        return name.value
        return self_attribute(operand)
    return None


def _getattr_self(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in ("self", "cls")
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def _argument_uses(
    reviewed: ReviewedFile, value: ast.AST, arguments: set[str], stable: set[str]
) -> list[str]:
    """Arguments ``value`` reads other than through stable attributes (``q.device``)."""
    nodes = reviewed.descendants(value)
    stable_bases = {
        id(node.value) for node in nodes if isinstance(node, ast.Attribute) and node.attr in stable
    }
    return sorted(
        {
            node.id
            for node in nodes
            if isinstance(node, ast.Name) and node.id in arguments and id(node) not in stable_bases
        }
    )


def find(reviewed: ReviewedFile, rules: LazyCacheRules) -> list[Flag]:
    flags: list[Flag] = []
    stable = set(rules.stable_attributes)
    for node in reviewed.nodes(ast.If):
        function = reviewed.function_of(node)
        if function is None or not name_matches(function.name, rules.hot_methods):
            continue
        attribute = _unset_attribute(node.test)
        if attribute is None:
            continue
        arguments = set(parameters(function)) - {"self", "cls"}
        for statement in node.body:
            if not isinstance(statement, ast.Assign | ast.AnnAssign):
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not any(self_attribute(t) for t in targets) or statement.value is None:
                continue
            used = _argument_uses(reviewed, statement.value, arguments, stable)
            if not used:
                continue
            line = reviewed.first_changed([node.lineno, statement.lineno])
            why = (
                f"self.{attribute} is set once, on the first {function.name} call, from "
                f"{used[0]}; what the first call (a profiling or warm-up run) saw is kept for "
                "every later call"
            )
            flag = reviewed.flag(PATTERN, line, why)
            if flag:
                flags.append(flag)
            break
    return flags
