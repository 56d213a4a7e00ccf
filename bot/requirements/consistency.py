"""Pins that disagree across files reaching the same platform.

vLLM pins torch in ``cuda.txt``, ``build/cuda.txt``, ``pyproject.toml`` and ``test/cuda.in``,
with comments like "must be updated alongside torch". Bumping one and not the others builds
against one torch and runs against another. Two pins to different versions, or a pin that
another file's range excludes, is a conflict.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from bot.requirements.effective import applies
from bot.requirements.parser import RequirementLine


@dataclass(frozen=True)
class PinConflict:
    name: str
    reason: str
    lines: tuple[tuple[str, int, str], ...]  # (file, line, specifier)

    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """Identity across revisions: line numbers move, files and specifiers do not."""
        return self.name, tuple(sorted((f, s) for f, _, s in self.lines))

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "reason": self.reason,
            "lines": [{"file": f, "line": n, "specifier": s} for f, n, s in self.lines],
        }


def _pinned_version(spec: SpecifierSet) -> str | None:
    pins = [s.version for s in spec if s.operator in ("==", "===") and "*" not in s.version]
    return pins[0] if len(pins) == 1 else None


def _same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def pin_conflicts(lines: Iterable[RequirementLine], env: dict[str, str]) -> list[PinConflict]:
    """Conflicting pins among ``lines`` (from every file reaching one platform) in ``env``."""
    by_name: dict[str, dict[tuple[str, int], RequirementLine]] = {}
    for line in lines:
        if line.requirement is None or line.url or not applies(line, env):
            continue
        by_name.setdefault(line.name, {})[(line.file, line.line)] = line
    conflicts = []
    for name, found in sorted(by_name.items()):
        if len({file for file, _ in found}) < 2:
            continue
        conflict = _conflict(name, list(found.values()))
        if conflict is not None:
            conflicts.append(conflict)
    return conflicts


def _conflict(name: str, lines: list[RequirementLine]) -> PinConflict | None:
    specs = {(line.file, line.line): line.requirement.specifier for line in lines}  # type: ignore[union-attr]
    by_version: dict[str, list[RequirementLine]] = {}
    for line in lines:
        pin = _pinned_version(specs[(line.file, line.line)])
        if pin is None:
            continue
        same = next((v for v in by_version if _same_version(v, pin)), pin)
        by_version.setdefault(same, []).append(line)
    if not by_version:
        return None
    if len(by_version) > 1:
        involved = [line for group in by_version.values() for line in group]
        reason = "pinned to " + " and ".join(by_version)
        return _make(name, reason, involved)
    pin, pinned = next(iter(by_version.items()))
    excluding = []
    for line in lines:
        spec = specs[(line.file, line.line)]
        try:
            if not spec.contains(pin, prereleases=True):
                excluding.append(line)
        except (InvalidSpecifier, InvalidVersion):
            continue
    if excluding and {line.file for line in excluding} - {line.file for line in pinned}:
        ranges = ", ".join(sorted({str(specs[(x.file, x.line)]) for x in excluding}))
        return _make(name, f"pinned to {pin}, which {ranges} excludes", pinned + excluding)
    return None


def _make(name: str, reason: str, lines: list[RequirementLine]) -> PinConflict:
    return PinConflict(
        name,
        reason,
        tuple((line.file, line.line, str(line.requirement.specifier)) for line in lines),  # type: ignore[union-attr]
    )
