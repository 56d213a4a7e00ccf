"""Whether a compiled file that the PR did not touch would change if it were recompiled.

"One of its inputs changed" is not enough: ``requirements/test/cuda.txt`` is compiled with
``-c requirements/cuda.txt``, and a package added to ``cuda.txt`` that nothing in the test
set requires adds nothing to it. The verdict is read from the committed pins alone, without
uv, using what ``uv pip compile -o FILE`` does: it prefers the versions already in FILE, so
a pin that still satisfies its (unchanged or new) range stays.

- **stale** (certain): a pin that a head requirement or constraint now excludes, or a
  package now required directly that the file does not pin;
- **may be stale**: a change only uv can judge (a requirement removed, a package newly
  constrained or required that is pinned already, so at least its ``# via`` line moves);
- not stale: every change is a constraint on a package the file does not pin, or a range
  its pin still satisfies, or only comments and order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from bot.requirements.compiled import CompiledFile
from bot.requirements.effective import applies, marker_environment
from bot.requirements.graph import Closure, RequirementTree
from bot.requirements.parser import RequirementLine, parse_requirement_file

Verdict = Literal["stale", "may be stale"]
_MAX_REASONS = 5


@dataclass
class Staleness:
    verdict: Verdict | None  # None: recompiling would not change the file
    reasons: list[str] = field(default_factory=list)


def compiled_environment(compiled: CompiledFile) -> dict[str, str]:
    """The marker environment the recorded command targets (x86_64, Python 3.12 by default)."""
    arch, python = "x86_64", "3.12"
    args = compiled.command
    for index, token in enumerate(args):
        option, _, value = token.partition("=")
        if not value and index + 1 < len(args):
            value = args[index + 1]
        if option == "--python-platform" and value:
            arch = value.split("-", 1)[0]
        elif option in ("--python-version", "-p", "--python") and value[:1].isdigit():
            python = value
    return marker_environment(arch, python)


def committed_pins(text: str, path: str) -> dict[str, str]:
    """name -> version of every ``name==version`` line of a compiled file."""
    pins: dict[str, str] = {}
    for line in parse_requirement_file(path, text).requirements:
        if line.requirement is None:
            continue
        for spec in line.requirement.specifier:
            if spec.operator in ("==", "===") and "*" not in spec.version:
                pins[line.name] = spec.version
    return pins


def _specs(lines: Iterable[RequirementLine], env: dict[str, str]) -> dict[str, set[str]]:
    """name -> the specifiers (with extras and URL) its lines give, markers evaluated."""
    found: dict[str, set[str]] = {}
    for line in lines:
        if not applies(line, env):
            continue
        requirement = line.requirement
        text = str(requirement.specifier) if requirement else line.text
        extras = ",".join(sorted(requirement.extras)) if requirement else ""
        found.setdefault(line.name, set()).add(f"[{extras}]{text}@{line.url or ''}")
    return found


def _combined(lines: Iterable[RequirementLine], name: str, env: dict[str, str]) -> SpecifierSet:
    spec = SpecifierSet()
    for line in lines:
        if line.name == name and line.requirement is not None and applies(line, env):
            spec &= line.requirement.specifier
    return spec


def _allows(spec: SpecifierSet, version: str) -> bool:
    try:
        return spec.contains(Version(version), prereleases=True)
    except (InvalidVersion, InvalidSpecifier):
        return True  # a version packaging cannot read: not evidence of staleness


def judge(compiled: CompiledFile, committed_text: str, base: Closure, head: Closure) -> Staleness:
    """The verdict for one compiled file, from its committed pins and both closures."""
    env = compiled_environment(compiled)
    pins = committed_pins(committed_text, compiled.path)
    base_req, head_req = _specs(base.requirements, env), _specs(head.requirements, env)
    base_con, head_con = _specs(base.constraints, env), _specs(head.constraints, env)
    head_lines = head.requirements + head.constraints
    stale: list[str] = []
    maybe: list[str] = []
    for name in sorted(set(base_req) | set(head_req)):
        if base_req.get(name) == head_req.get(name):
            continue
        if name not in head_req:
            maybe.append(f"`{name}` is no longer required")
        elif name not in pins:
            stale.append(f"`{name}` is required but not pinned")
        elif not _allows(_combined(head_lines, name, env), pins[name]):
            stale.append(f"`{name}=={pins[name]}` is outside the new range")
        elif name not in base_req:
            maybe.append(f"`{name}` is now required directly (pinned already)")
    for name in sorted(set(base_con) | set(head_con)):
        if base_con.get(name) == head_con.get(name) or name not in pins:
            continue  # a constraint on a package nothing requires adds nothing
        if name in head_con and not _allows(_combined(head_lines, name, env), pins[name]):
            stale.append(f"`{name}=={pins[name]}` is outside the new constraint")
        elif name not in base_con or name not in head_con:
            maybe.append(f"`{name}` is {'now' if name in head_con else 'no longer'} constrained")
    if stale:
        return Staleness("stale", _cut(stale))
    if maybe:
        return Staleness("may be stale", _cut(maybe))
    return Staleness(None)


def _cut(reasons: list[str]) -> list[str]:
    if len(reasons) <= _MAX_REASONS:
        return reasons
    return reasons[:_MAX_REASONS] + [f"and {len(reasons) - _MAX_REASONS} more"]


def judge_in_trees(
    compiled: CompiledFile, base_tree: RequirementTree, head_tree: RequirementTree
) -> Staleness:
    """:func:`judge` with the closures and committed text read from the two trees."""
    text = head_tree.reader.read_text(compiled.path) or ""
    base = base_tree.closure(compiled.inputs, compiled.constraints)
    head = head_tree.closure(compiled.inputs, compiled.constraints)
    return judge(compiled, text, base, head)
