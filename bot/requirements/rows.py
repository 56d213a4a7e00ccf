"""What the requirement analysis says: one row per affected cell, and the whole analysis.

Plain data, shared by :mod:`bot.requirements.analysis` (which fills it in),
:mod:`bot.requirements.resolve_cells` (which sets the resolutions) and the check that renders it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.requirements.compiled import CompiledFile
from bot.requirements.consistency import PinConflict
from bot.requirements.effective import SetDiff
from bot.requirements.matrix import Cell
from bot.requirements.parser import Problem
from bot.requirements.resolve import Resolution
from bot.requirements.sources import Ignored
from bot.requirements.unreached import Unreached


@dataclass
class StaleCompiled:
    """A compiled file the PR did not touch whose inputs changed so that it may differ now."""

    path: str
    changed_sources: list[str]
    rerun: str = "not run"  # not run | same | differs | failed | skipped
    rerun_detail: str = ""
    compiled: CompiledFile | None = field(default=None, repr=False)
    verdict: str = "stale"  # stale | may be stale (bot.requirements.staleness)
    reasons: list[str] = field(default_factory=list)
    # The patch that makes the committed file what its command writes now (a re-run that
    # differs): what "Apply fix" and `/prbot fix requirements` push (bot/fixes).
    fix_patch: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changed_sources": self.changed_sources,
            "rerun": self.rerun,
            "rerun_detail": self.rerun_detail,
            "verdict": self.verdict,
            "reasons": self.reasons,
            "fix_patch": self.fix_patch,
        }


@dataclass
class Row:
    """One affected (platform, arch, python) cell."""

    cell: Cell
    why: list[str]
    diff: SetDiff
    problems: list[tuple[Problem, bool]] = field(default_factory=list)  # (problem, new)
    conflicts: list[tuple[PinConflict, bool]] = field(default_factory=list)  # (conflict, new)
    compiled: list[StaleCompiled] = field(default_factory=list)
    resolution: Resolution | None = None
    # True when the base already failed the same way: not this PR's doing.
    failing_at_base: bool = False
    notes: list[str] = field(default_factory=list)
    # Index options and URL lines kept from uv (bot.requirements.sources), with file:line.
    ignored: list[Ignored] = field(default_factory=list)
    # Entry or constraint files read at base under another path: {head path: base path}.
    moved_entries: dict[str, str] = field(default_factory=dict)
    # For a moved entry whose old path the PR kept: what that file is now (moves.left_behind).
    moved_left: dict[str, str] = field(default_factory=dict)
    # Affected only because a watched file (setup.py) changed, not through its own files.
    only_watched: bool = False

    @property
    def new_problems(self) -> list[Problem]:
        return [p for p, new in self.problems if new]


@dataclass
class Analysis:
    relevant: bool
    reason: str = ""
    rows: list[Row] = field(default_factory=list)
    unaffected: list[str] = field(default_factory=list)
    orphan_compiled: list[StaleCompiled] = field(default_factory=list)
    unreached: list[Unreached] = field(default_factory=list)
    unreached_more: int = 0  # changed files in no declared set beyond those listed
    uv_runs: int = 0
