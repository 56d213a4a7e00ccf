"""Effective requirement sets per (platform, arch, python) and their base/head diff.

An effective set is what one environment gets from a closure: markers evaluated for that
environment, several lines for one package merged, constraints folded into the specifier
of the packages that are required. Constraint-only packages are not part of the set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.markers import Marker
from packaging.specifiers import SpecifierSet

from bot.requirements.graph import Closure
from bot.requirements.parser import RequirementLine

# How `platform_machine` spells an architecture on Linux, and what uv targets use.
_LINUX = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}


def marker_environment(arch: str, python_version: str) -> dict[str, str]:
    """The PEP 508 environment of CPython ``python_version`` on Linux ``arch``."""
    parts = python_version.split(".")
    full = (
        python_version if len(parts) >= 3 else f"{parts[0]}.{parts[1] if len(parts) > 1 else 0}.0"
    )
    return {
        **_LINUX,
        "platform_machine": arch,
        "python_version": ".".join(full.split(".")[:2]),
        "python_full_version": full,
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "implementation_version": full,
        "platform_release": "",
        "platform_version": "",
        "extra": "",
    }


def applies(line: RequirementLine, env: dict[str, str]) -> bool:
    """Whether the line's marker (if any) holds in ``env``."""
    marker = line.requirement.marker if line.requirement else None
    return marker is None or _evaluate(marker, env)


def _evaluate(marker: Marker, env: dict[str, str]) -> bool:
    try:
        return marker.evaluate(env)
    except Exception:  # noqa: BLE001 - an odd comparison must not hide the package
        return True


@dataclass(frozen=True)
class Source:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class EffectiveRequirement:
    """One package as an environment gets it, with every line that contributed."""

    name: str
    extras: tuple[str, ...] = ()
    specifier: str = ""
    url: str | None = None
    marker: str | None = None
    editable: bool = False
    local: bool = False
    sources: list[Source] = field(default_factory=list)
    lines: list[RequirementLine] = field(default_factory=list)

    def display(self, with_marker: bool = False) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        text = f"{self.name}{extras}"
        # A URL line merged with a ranged line for the same package: show both, or a change
        # to the range would read as "x @ url → x @ url".
        if self.url:
            text += f" @ {self.url}" + (f" ({self.specifier})" if self.specifier else "")
        else:
            text += self.specifier
        if self.editable:
            text = f"-e {text}"
        if with_marker and self.marker:
            text += f"; {self.marker}"
        return text

    def key(self) -> tuple[object, ...]:
        # The specifier as the versions it allows: `>=2.12` and `>=2.12.0` are one
        # requirement (PEP 440 pads releases with zeros), so rewriting it is no change.
        return (self.extras, SpecifierSet(self.specifier), self.url, self.marker, self.editable)


def effective_set(closure: Closure, env: dict[str, str]) -> dict[str, EffectiveRequirement]:
    """Package name -> what ``env`` gets from ``closure``."""
    merged: dict[str, EffectiveRequirement] = {}
    specs: dict[str, SpecifierSet] = {}
    for line in closure.requirements:
        if not applies(line, env):
            continue
        entry = merged.get(line.name)
        if entry is None:
            entry = merged[line.name] = EffectiveRequirement(line.name)
            specs[line.name] = SpecifierSet()
        requirement = line.requirement
        if requirement is not None:
            specs[line.name] &= requirement.specifier
            entry.extras = tuple(sorted(set(entry.extras) | set(requirement.extras)))
            if requirement.marker is not None:
                marker = str(requirement.marker)
                entry.marker = marker if entry.marker in (None, marker) else "…"
        entry.url = line.url or entry.url
        entry.editable = entry.editable or line.editable
        entry.local = entry.local or line.is_local
        entry.sources.append(Source(line.file, line.line))
        entry.lines.append(line)
    for line in closure.constraints:
        if line.name in merged and line.requirement is not None and applies(line, env):
            specs[line.name] &= line.requirement.specifier
            merged[line.name].sources.append(Source(line.file, line.line))
            merged[line.name].lines.append(line)
    for name, spec in specs.items():
        merged[name].specifier = str(spec)
    return dict(sorted(merged.items()))


@dataclass
class SetDiff:
    added: list[EffectiveRequirement] = field(default_factory=list)
    removed: list[EffectiveRequirement] = field(default_factory=list)
    changed: list[tuple[EffectiveRequirement, EffectiveRequirement]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def diff_sets(
    base: dict[str, EffectiveRequirement], head: dict[str, EffectiveRequirement]
) -> SetDiff:
    """Packages added, removed, and changed (specifier, extras, URL or marker)."""
    result = SetDiff()
    for name, entry in head.items():
        before = base.get(name)
        if before is None:
            result.added.append(entry)
        elif before.key() != entry.key():
            result.changed.append((before, entry))
    result.removed = [entry for name, entry in base.items() if name not in head]
    return result


def change_texts(before: EffectiveRequirement, after: EffectiveRequirement) -> tuple[str, str]:
    """(from, to) strings; markers are shown only when they are what changed."""
    with_marker = before.display() == after.display()
    return before.display(with_marker), after.display(with_marker)


def change_source(before: EffectiveRequirement, after: EffectiveRequirement) -> tuple[Source, str]:
    """The line that made the change, and which side ("head"/"base") it is on.

    The first source of a package is often not the edited line: a constraint file bumping a
    pin, or a second line narrowing a range. A head line whose text is new says it; else a
    base line that is gone (a removed constraint or marker line).
    """
    old = {(line.file, line.text) for line in before.lines}
    new = {(line.file, line.text) for line in after.lines}
    for line in after.lines:
        if (line.file, line.text) not in old:
            return Source(line.file, line.line), "head"
    for line in before.lines:
        if (line.file, line.text) not in new:
            return Source(line.file, line.line), "base"
    source = after.sources[0] if after.sources else Source("", 0)
    return source, "head"
