"""Types shared by the checks, the logic packages and the runner.

This module sits below everything that uses it: logic packages (bot/requirements,
bot/gendocs, bot/duplicates, bot/integration, bot/review, bot/jobs) import their shared types
from here, never from ``bot.checks`` (which imports them). ``bot.checks.base`` re-exports all
of it next to :class:`~bot.checks.base.Check`. Where each check's rule model lives: see
``bot/checks/base.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from bot.local.sandbox import RunResult


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"


# Worst first: the report's overall status is the worst section status. ``fail`` outranks
# ``error``: a PR that makes one check crash must not turn another check's failure into
# something milder (and ``error`` itself never passes; see bot/github/publish.py).
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


def valid_regex(value: str | None) -> str | None:
    """``value`` unchanged when it compiles as a regular expression (None passes); else the
    ValueError a rule model's validator raises, so a bad pattern is one line at load."""
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
    return value


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


class CommandRunner(Protocol):
    """Runs an external command (uv, a repository's generator) sandboxed: ``SandboxRunner``.

    Checks never start processes themselves; a test hands in a runner that counts or refuses.
    """

    invocations: int
    # Whether a child is kept from what prbot's own user can read (its key, its database,
    # /proc): a PR's changed generator runs only then (bot/local/sandbox.py).
    isolated: bool

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: str | None = None,
        network: bool = True,
    ) -> RunResult: ...


class PRIndex(Protocol):
    """The open-PR index as the context carries it. Its query types belong to the duplicates
    package, which sits above this module: ``bot.duplicates.index.OpenPRIndex`` is the full
    protocol, and the duplicates check narrows to it."""

    def query(self, features: Any, config: Any, top: int = 10) -> Any: ...

    def template_lines(self) -> Any: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class CheckContext:
    """Shared services handed to every check; built once per run. Checks tolerate ``None``.

    - ``work_dir``: a scratch directory that lives as long as the run.
    - ``cache``: key-value cache that outlives one run (uv resolutions, extracted docs).
    - ``open_prs``: the open-PR index the duplicates check queries (server: database;
      CLI: a PR export file).
    - ``runner``: runs external commands sandboxed (uv, generators); None runs nothing.
    - ``uv_cache_dir``: uv's own download cache, kept across runs (None: one per run).
    """

    work_dir: Path
    cache: Cache = field(default_factory=MemoryCache)
    open_prs: PRIndex | None = None
    runner: CommandRunner | None = None
    uv_cache_dir: Path | None = None
