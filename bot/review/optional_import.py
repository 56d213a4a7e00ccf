"""silent-optional-import: a third-party import whose failure the handler swallows.

``try: import kernel_pkg`` / ``except ImportError: return False`` drops the reason a package
is missing on the floor. A swallowed import counts only when the failure is really lost in
the file: the handler returns no reason (a message string, the exception), logs nothing,
does not re-raise, binds no sentinel the module tests later, and the distribution is in no
requirement file or extra of the repository. ``supports_combination`` returning an install
hint is the opposite: vLLM's platform raises that reason when the backend is chosen.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Container, Iterable

from packaging.utils import canonicalize_name

from bot.core.limits import (
    MAX_PYTHON_SOURCE_BYTES,
    MAX_REQUIREMENTS_BYTES,
    InputRejected,
    check_size,
    parse_python,
    walk,
)
from bot.requirements.parser import parse_requirement_file, parse_requirement_text
from bot.review.config import OptionalImportRules
from bot.review.source import Flag, ReviewedFile, identifier, is_reason

PATTERN = "silent-optional-import"


def _requirement_names(specs: Iterable[object], path: str) -> set[str]:
    names = set()
    for spec in specs:
        if isinstance(spec, str):
            parsed = parse_requirement_text(path, 0, spec)
            name = getattr(parsed, "name", None)
            if name:
                names.add(name)
    return names


def _pyproject_names(path: str, text: str) -> set[str]:
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError:
        return set()
    if not isinstance(project, dict):
        return set()
    specs = list(project.get("dependencies") or [])
    for extra in (project.get("optional-dependencies") or {}).values():
        if isinstance(extra, list):
            specs.extend(extra)
    return _requirement_names(specs, path)


def _setup_names(path: str, text: str) -> set[str]:
    """Quoted requirement strings inside ``install_requires=`` / ``extras_require=``."""
    try:
        tree = parse_python(text, path, limit=MAX_PYTHON_SOURCE_BYTES)
        specs = []
        for node in walk(tree, path):
            if isinstance(node, ast.keyword) and node.arg in ("install_requires", "extras_require"):
                specs += [
                    n.value
                    for n in walk(node.value, path)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                ]
    except InputRejected:
        return set()
    return _requirement_names(specs, path)


def declared_distributions(files: dict[str, str]) -> set[str]:
    """Canonical names declared by requirement files, pyproject extras and setup.py."""
    names: set[str] = set()
    for path, text in files.items():
        try:
            check_size(path, text, MAX_REQUIREMENTS_BYTES, "requirements")
        except InputRejected:
            continue
        if path.endswith("pyproject.toml"):
            names |= _pyproject_names(path, text)
        elif path.endswith("setup.py"):
            names |= _setup_names(path, text)
        else:
            names |= {r.name for r in parse_requirement_file(path, text).requirements}
    return names


def _catches_import_failure(handler: ast.ExceptHandler, import_errors: set[str]) -> bool:
    """The handler is about a missing package (``except ImportError``).

    A bare or ``except Exception`` around an import and more logic is a capability probe
    that fails closed on anything; it says nothing about the dependency in particular.
    """
    if handler.type is None:
        return False
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(identifier(c) in import_errors for c in caught)


def _speaks(reviewed: ReviewedFile, handler: ast.ExceptHandler, calls: set[str]) -> bool:
    """The handler does not swallow the failure.

    It re-raises, logs a warning (or worse), returns a reason (an install hint that the
    caller raises or shows), passes the exception on (``as error`` then uses ``error``), or
    imports an alternative (a fallback to another version's module path, not a missing
    package).
    """
    for statement in handler.body:
        for node in reviewed.descendants(statement):
            if isinstance(node, ast.Raise | ast.Import | ast.ImportFrom):
                return True
            if isinstance(node, ast.Return) and is_reason(node.value):
                return True
            if isinstance(node, ast.Call) and identifier(node.func) in calls:
                return True
            if handler.name and isinstance(node, ast.Name) and node.id == handler.name:
                return True
    return False


def _swallowed_as(handler: ast.ExceptHandler) -> str:
    """What the handler does instead, in words a reviewer can check on the line."""
    returns = [s for s in handler.body if isinstance(s, ast.Return)]
    if returns:
        value = returns[0].value
        shown = ast.unparse(value) if value is not None else "None"
        return f"returns {shown[:40]}"
    if all(isinstance(s, ast.Pass) for s in handler.body):
        return "passes"
    return "carries on"


def _sentinel_checked(reviewed: ReviewedFile, handler: ast.ExceptHandler) -> bool:
    """A module-level handler binds a sentinel (``X = None``) that the module tests later.

    ``try: from pkg import X`` / ``except ImportError: X = None`` is the usual optional
    dependency: the failure surfaces where ``X`` is checked (an assert, an ``if``).
    """
    bound = {
        target.id
        for statement in handler.body
        if isinstance(statement, ast.Assign)
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    if not bound:
        return False
    tests = [n.test for n in reviewed.nodes(ast.Assert, ast.If, ast.IfExp)]
    return any(
        isinstance(n, ast.Name) and n.id in bound
        for test in tests
        for n in reviewed.descendants(test)
    )


def _gated_on(reviewed: ReviewedFile, node: ast.AST, module: str) -> bool:
    """The enclosing function runs only where the package is known to work: a decorator
    naming it (``@if_aiter_supported``) makes the import a symbol probe, not a presence one."""
    function = reviewed.function_of(node)
    if function is None:
        return False
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if module.lower() in (identifier(target) or "").lower():
            return True
    return False


def _surfaced_by_class(reviewed: ReviewedFile, node: ast.AST, methods: set[str]) -> bool:
    """The enclosing class also has a selection check (``validate_configuration``) that
    returns a reason: vLLM's selector asks ``is_available()`` through it, so a False from
    the probe reaches the user as that reason (TOKENSPEED_MLA's prefill install hint)."""
    klass = reviewed.class_of(node)
    if klass is None:
        return False
    for item in klass.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name in methods:
            returns = (n for n in reviewed.descendants(item) if isinstance(n, ast.Return))
            if any(r.value is not None and _returns_reasons(r.value) for r in returns):
                return True
    return False


def _returns_reasons(value: ast.AST) -> bool:
    """A reason, or a list built of reasons (``[HINT if r == ... else r for r in ...]``)."""
    if is_reason(value):
        return True
    if isinstance(value, ast.ListComp | ast.List):
        return True
    if isinstance(value, ast.Name | ast.Attribute):
        return True  # a returned reasons list or message held in a name
    return False


def _imported_modules(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
        return [statement.module]
    return []


def find(
    reviewed: ReviewedFile, rules: OptionalImportRules, declared: Container[str]
) -> list[Flag]:
    own = set(rules.first_party) | set(rules.ignore)
    calls = set(rules.warning_calls)
    import_errors = set(rules.import_errors)
    flags = []
    for node in reviewed.nodes(ast.Try, ast.TryStar):
        handlers = [h for h in node.handlers if _catches_import_failure(h, import_errors)]
        if not handlers:
            continue
        for statement in node.body:
            modules = [
                m
                for m in _imported_modules(statement)
                if m and m.count(".") < rules.max_module_depth
            ]
            top = [m.split(".")[0] for m in modules]
            third_party = [
                t for t in top if t not in sys.stdlib_module_names and t not in own and t
            ]
            if not third_party:
                continue
            module = third_party[0]
            if _gated_on(reviewed, node, module):
                break
            distribution = canonicalize_name(rules.distributions.get(module, module))
            if distribution in declared or any(_speaks(reviewed, h, calls) for h in handlers):
                break
            if _surfaced_by_class(reviewed, node, set(rules.reason_methods)):
                break
            module_level = reviewed.function_of(node) is None
            if module_level and any(_sentinel_checked(reviewed, h) for h in handlers):
                break
            line = reviewed.first_changed([statement.lineno, handlers[0].lineno])
            why = (
                f"the ImportError handler {_swallowed_as(handlers[0])}: no reason returned, "
                f"nothing logged or re-raised here, and {distribution} is in no requirement "
                "file or extra; check that the caller tells the user"
            )
            flag = reviewed.flag(PATTERN, line, why)
            if flag:
                flags.append(flag)
            break
    return flags
