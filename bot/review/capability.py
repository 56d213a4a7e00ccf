"""capability-contradiction: code that does what the class declares it never needs to.

Two shapes, both from attention backends:

- a module whose metadata builder declares ``QueryLenSupport.UNIFORM`` (every request in a
  batch has the same query length) and then carries a fallback branch for uneven lengths.
  The scheduler trusts the declaration, so the fallback is untested and can index past
  metadata built for uniform batches. A branch that raises or asserts enforces the
  declaration and is not flagged.
- a ``supports_<feature>()`` that returns ``True`` while the same module raises when that
  feature is present: the selector picks the backend, then the backend fails.
"""

from __future__ import annotations

import ast
import re

from bot.review.config import CapabilityRules
from bot.review.source import Flag, ReviewedFile, dotted, identifier, related_classes

PATTERN = "capability-contradiction"


def _uniform_declarations(reviewed: ReviewedFile, rules: CapabilityRules) -> list:
    """Class-level assignments of a uniform-query-length declaration."""
    wanted = set(rules.uniform_declarations)
    return [
        node
        for node in reviewed.nodes(ast.Assign, ast.AnnAssign)
        if reviewed.class_of(node) is not None
        and reviewed.function_of(node) is None
        and node.value is not None
        and dotted(node.value) in wanted
    ]


def _names(reviewed: ReviewedFile, node: ast.AST) -> list[str]:
    return [n for n in (identifier(x) for x in reviewed.descendants(node)) if n]


def _uneven_test(reviewed: ReviewedFile, test: ast.AST, lengths: re.Pattern[str]) -> bool:
    """``a % b != 0`` / ``a % b`` over lengths, ``max_q != min_q``, or ``non_uniform``."""
    candidates = [test]
    if isinstance(test, ast.BoolOp):
        candidates = list(test.values)

    def lengths_mod_lengths(node: ast.AST) -> bool:
        # tokens % requests: uneven per-request lengths (not "tokens % 8", which is padding)
        return (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and all(
                any(lengths.search(n) for n in _names(reviewed, side))
                for side in (node.left, node.right)
            )
        )

    for part in candidates:
        if lengths_mod_lengths(part):
            return True
        if isinstance(part, ast.Compare) and len(part.ops) == 1:
            left, right, op = part.left, part.comparators[0], part.ops[0]
            zero = isinstance(right, ast.Constant) and right.value == 0
            if zero and isinstance(op, ast.NotEq | ast.Gt) and lengths_mod_lengths(left):
                return True
            if isinstance(op, ast.NotEq):
                sides = [identifier(left) or "", identifier(right) or ""]
                if all(lengths.search(s) for s in sides) and {"max", "min"} <= {
                    s.split("_")[0] for s in sides
                }:
                    return True
        name = identifier(part) or ""
        if re.search(r"(?i)non_?uniform|uneven|ragged", name):
            return True
    return False


def _enforces(reviewed: ReviewedFile, branch: ast.If) -> bool:
    return any(
        isinstance(n, ast.Raise | ast.Assert)
        for statement in branch.body
        for n in reviewed.descendants(statement)
    )


def _uniform_flags(reviewed: ReviewedFile, rules: CapabilityRules) -> list[Flag]:
    declarations = _uniform_declarations(reviewed, rules)
    if not declarations:
        return []
    lengths = re.compile(rules.length_names)
    flags = []
    for branch in reviewed.nodes(ast.If):
        if reviewed.function_of(branch) is None:
            continue
        klass = reviewed.class_of(branch)
        declaration = next(
            (d for d in declarations if related_classes(reviewed.class_of(d), klass)), None
        )
        if declaration is None or not _uneven_test(reviewed, branch.test, lengths):
            continue
        if _enforces(reviewed, branch):
            continue
        declared = dotted(declaration.value)
        line = reviewed.first_changed([branch.lineno, declaration.lineno])
        why = (
            f"{reviewed.class_of(declaration).name} declares {declared} "
            f"(line {declaration.lineno}), yet this branch "
            "handles uneven query lengths: a path the declaration says never runs"
        )
        flag = reviewed.flag(PATTERN, line, why)
        if flag:
            flags.append(flag)
    return flags


def _returns_true(reviewed: ReviewedFile, function: ast.AST) -> ast.Return | None:
    returns = [n for n in reviewed.descendants(function) if isinstance(n, ast.Return)]
    constant_true = [isinstance(r.value, ast.Constant) and r.value.value is True for r in returns]
    if returns and all(constant_true):
        return returns[0]
    return None


def _rejects(statement: ast.stmt, rejections: set[str]) -> bool:
    if not isinstance(statement, ast.Raise) or statement.exc is None:
        return False
    raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
    return identifier(raised) in rejections


def _present_names(reviewed: ReviewedFile, test: ast.AST) -> list[str]:
    """Names the test requires to be present: not those it checks for absence.

    ``if sinks is not None`` rejects sinks; ``if self.window is None: raise`` rejects their
    absence, which a ``supports_window() -> True`` backend may rightly do.
    """
    absent: set[int] = set()
    for node in reviewed.descendants(test):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            absent.add(id(node.operand))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            right = node.comparators[0]
            if isinstance(node.ops[0], ast.Is | ast.Eq) and isinstance(right, ast.Constant):
                if right.value in (None, False, 0):
                    absent.add(id(node.left))
    return [
        name
        for node in reviewed.descendants(test)
        if id(node) not in absent and (name := identifier(node))
    ]


def _supports_flags(reviewed: ReviewedFile, rules: CapabilityRules) -> list[Flag]:
    features: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.Return]] = {}
    for function in reviewed.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
        if reviewed.class_of(function) is None or not function.name.startswith(
            rules.supports_prefix
        ):
            continue
        feature = function.name[len(rules.supports_prefix) :].strip("_")
        if len(feature) < 3:
            continue
        returned = _returns_true(reviewed, function)
        if returned is not None:
            features[feature] = (function, returned)
    if not features:
        return []
    rejections = set(rules.rejections)
    flags = []
    for branch in reviewed.nodes(ast.If):
        if reviewed.function_of(branch) is None:
            continue
        if not any(_rejects(s, rejections) for s in branch.body):
            continue
        names = [n.lower() for n in _present_names(reviewed, branch.test)]
        for feature, (function, returned) in features.items():
            if not related_classes(reviewed.class_of(function), reviewed.class_of(branch)):
                continue
            stem = feature.lower().rstrip("s")
            if not any(re.search(rf"(^|_){re.escape(stem)}s?($|_)", n) for n in names):
                continue
            line = reviewed.first_changed([branch.lineno, returned.lineno])
            why = (
                f"{function.name}() returns True (line {returned.lineno}) but this branch "
                f"raises when {feature} is used: the selector picks the backend, then it fails"
            )
            flag = reviewed.flag(PATTERN, line, why)
            if flag:
                flags.append(flag)
            break
    return flags


def find(reviewed: ReviewedFile, rules: CapabilityRules) -> list[Flag]:
    return _uniform_flags(reviewed, rules) + _supports_flags(reviewed, rules)
