"""The one interface every check implements.

A check is a module under ``bot/checks/`` exporting ``CHECK = Check(...)``. It is a pure
function of a snapshot, its rules and the shared context: no network I/O of its own. What it
needs from outside (uv, a sandboxed runner, the open-PR index) comes in through
:class:`CheckContext`, so tests can hand in real local stand-ins.

The shared types live in :mod:`bot.core.sections` (re-exported here) so that logic packages
need not import this package. The agreed place of a check's rule model (a
:class:`CheckRules` subclass) is the ``config.py`` of the logic package the check drives
(``bot/requirements/config.py``, ``bot/gendocs/config.py``, ``bot/review/config.py``,
``bot/duplicates/config.py``); a check without a package of its own (``changed_files``)
keeps it in its module. Two are still to move, once the work in flight on them has landed:
integration's (``bot/integration/config.py``) and jobs' (``bot/checks/jobs.py``).
tests/test_invariant_imports.py holds every check to this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.core.sections import (
    MAX_SUMMARY_CHARS,
    STATUS_SEVERITY,
    Cache,
    CheckContext,
    CheckRules,
    CommandRunner,
    MemoryCache,
    Section,
    Status,
    cap_summary,
    join_limited,
)

if TYPE_CHECKING:
    from bot.core.snapshot import Snapshot

__all__ = [
    "MAX_SUMMARY_CHARS",
    "STATUS_SEVERITY",
    "Cache",
    "Check",
    "CheckContext",
    "CheckRules",
    "CommandRunner",
    "MemoryCache",
    "RunFunction",
    "Section",
    "Status",
    "cap_summary",
    "join_limited",
]

RunFunction = Callable[["Snapshot", Any, CheckContext], Section]


@dataclass(frozen=True)
class Check:
    """A registered check: its name (the JSON ``check`` value), title, rule model and entry."""

    name: str
    title: str
    run: RunFunction
    rules_model: type[CheckRules] = CheckRules
    order: int = 100
    # Jinja2 template (relative to templates/) that renders this check's section body.
    template: str | None = None
