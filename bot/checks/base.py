"""The one interface every check implements.

A check is a module under ``bot/checks/`` exporting ``CHECK = Check(...)``. It is a pure
function of a snapshot, its rules and the shared context: no network I/O of its own. What it
needs from outside (uv, a sandboxed runner, the open-PR index, a CI client) comes in through
:class:`CheckContext`, so tests can hand in real local stand-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from bot.snapshot import Snapshot


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"


# Worst first: the report's overall status is the worst section status. ``fail`` outranks
# ``error``: a PR that makes one check crash must not turn another check's failure into
# something milder (and ``error`` itself never passes; see bot/publish.py).
STATUS_SEVERITY = {
    Status.FAIL: 4,
    Status.ERROR: 3,
    Status.WARN: 2,
    Status.PASS: 1,
    Status.SKIP: 0,
}


# The last-resort bound on one summary line, applied wherever a Section's summary is set.
# Checks list names with :func:`join_limited` first; this only catches what they missed.
MAX_SUMMARY_CHARS = 400


def cap_summary(text: object) -> str:
    """One summary line of at most :data:`MAX_SUMMARY_CHARS`, cut at a word, saying so."""
    summary = str(text)
    if len(summary) <= MAX_SUMMARY_CHARS:
        return summary
    room = MAX_SUMMARY_CHARS - len(" … (999,999,999 more characters)")
    cut = summary[:room]
    space = cut.rfind(" ")
    if space > room // 2:
        cut = cut[:space]
    cut = cut.rstrip(" ,;:")
    return f"{cut} … ({len(summary) - len(cut):,} more characters)"


def join_limited(items: list[str], limit: int = 5, separator: str = ", ") -> str:
    """``a, b, c and 2,491 more``: at most ``limit`` items, then how many were left out."""
    shown = separator.join(items[:limit])
    rest = len(items) - limit
    # "a, b and 3 more", but "x in y; z in w; and 3 more" where items hold commas.
    joiner = " " if separator == ", " else separator
    return f"{shown}{joiner}and {rest:,} more" if rest > 0 else shown


@dataclass
class Section:
    """What one check says about one PR head.

    ``findings`` follow the JSON report contract for the check (DESIGN.md), strongest first.
    ``data`` carries anything else the check's template wants; it is not part of the contract.
    """

    check: str
    status: Status
    summary: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def __setattr__(self, name: str, value: Any) -> None:
        # Every way a summary is set (the constructor, a check editing it later) is capped,
        # so no check can fill the comment with one line.
        if name == "summary":
            value = cap_summary(value)
        super().__setattr__(name, value)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": str(self.status),
            "summary": self.summary,
            "findings": self.findings,
        }


class CheckRules(BaseModel):
    """Base of every check's rule model. Unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True


class Cache(Protocol):
    """A small key-value cache shared across runs (database-backed in the server)."""

    def get(self, namespace: str, key: str) -> str | None: ...

    def put(self, namespace: str, key: str, value: str) -> None: ...


class MemoryCache:
    """In-process cache, used by the CLI and by tests."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], str] = {}

    def get(self, namespace: str, key: str) -> str | None:
        return self._data.get((namespace, key))

    def put(self, namespace: str, key: str, value: str) -> None:
        self._data[(namespace, key)] = value


@dataclass
class CheckContext:
    """Shared services handed to every check. Checks must tolerate ``None`` services.

    - ``cache``: key-value cache that outlives one run (uv resolutions, extracted docs).
    - ``open_prs``: the open-PR index the duplicates check queries (server: database;
      CLI: a PR export file). Its type is defined by ``bot.checks.duplicates``.
    - ``runner``: runs external commands sandboxed (``bot.sandbox.SandboxRunner``).
    - ``ci``: CI engines for GPU jobs, when configured.
    - ``work_dir``: a scratch directory that lives as long as the run.
    - ``dry_run``: when true, checks must not cause external effects (no CI dispatch).
    """

    work_dir: Path
    cache: Cache = field(default_factory=MemoryCache)
    open_prs: Any = None
    runner: Any = None
    ci: Any = None
    dry_run: bool = False
    extras: dict[str, Any] = field(default_factory=dict)


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
