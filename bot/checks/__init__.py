"""Check registry. Every module in this package that exports ``CHECK`` is a check.

Adding a check means adding a module (plus its template and rule model); nothing here
changes. Order in the report comes from ``Check.order``.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from bot.checks.base import Check, CheckContext, CheckRules, Section, Status

__all__ = [
    "Check",
    "CheckContext",
    "CheckRules",
    "Section",
    "Status",
    "all_checks",
    "checks_in",
    "get_check",
]


@cache
def checks_in(package: str) -> tuple[Check, ...]:
    """Every ``CHECK`` exported by a module of ``package``, in report order."""
    root = importlib.import_module(package)
    found: list[Check] = []
    for module_info in pkgutil.iter_modules(root.__path__):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        module = importlib.import_module(f"{package}.{module_info.name}")
        check = getattr(module, "CHECK", None)
        if isinstance(check, Check):
            found.append(check)
    return tuple(sorted(found, key=lambda c: (c.order, c.name)))


def all_checks() -> tuple[Check, ...]:
    """The built-in checks: every module under ``bot/checks/`` that exports ``CHECK``."""
    return checks_in(__name__)


def get_check(name: str) -> Check:
    for check in all_checks():
        if check.name == name:
            return check
    raise KeyError(name)
