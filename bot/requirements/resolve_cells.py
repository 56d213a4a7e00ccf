"""Resolving the affected cells: flatten each cell's input, run uv once per distinct input.

A cell that fails at head is also resolved at base (usually a cache hit, since every PR
against the same base shares it), so a failure the PR did not cause is told apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.core.sections import CheckContext
from bot.requirements.config import RequirementsRules
from bot.requirements.effective import applies, marker_environment
from bot.requirements.graph import Closure
from bot.requirements.parser import URL_LIKE as _URL_LIKE
from bot.requirements.resolve import Resolution, ResolutionRequest, resolver_for
from bot.requirements.sources import Ignored, SourcePolicy, option_text

if TYPE_CHECKING:
    from bot.requirements.rows import Row

# Option lines uv honours inside a requirements file; the rest are pip-only. --trusted-host
# is passed on only to be refused with a reason (see bot.requirements.sources).
_PASSED_OPTIONS = {"index-url", "extra-index-url", "find-links", "no-index", "trusted-host"}
_PASSED_OPTIONS |= {"no-binary", "only-binary"}


@dataclass
class FlatInput:
    """One environment's uv input, and what was kept from uv on the way."""

    requirements: str
    constraints: str
    local: list[str] = field(default_factory=list)  # paths that mean nothing outside the tree
    ignored: list[Ignored] = field(default_factory=list)  # refused by the source policy


def flatten(closure: Closure, env: dict[str, str], policy: SourcePolicy | None = None) -> FlatInput:
    """The requirements and constraints text uv gets for one environment.

    Only lines whose markers hold are kept, so a change that only touches aarch64 lines
    leaves the x86_64 input, and its cache entry, as it was. Index options and URL lines go
    through ``policy`` (by default: a trusted author's, so only the location rules apply).
    """
    policy = policy or SourcePolicy(trusted=True)
    lines: list[str] = []
    flat = FlatInput("", "")
    for option in closure.options:
        if option.option not in _PASSED_OPTIONS:
            continue
        if option.option == "find-links" and not _URL_LIKE.match(option.value or ""):
            flat.local.append(option.text)  # a local path means nothing outside the checkout
            continue
        refused = policy.check_option(option)
        if refused is not None:
            flat.ignored.append(refused)
            continue
        # Written out one option per line: a line can hold several options, and passing the
        # line as it is would let an unchecked second option ride along with a checked one.
        text = option_text(option)
        if text not in lines:
            lines.append(text)
    for line in closure.requirements:
        if not applies(line, env):
            continue
        if line.is_local:
            flat.local.append(line.text)
            continue
        refused = policy.check_requirement(line)
        if refused is not None:
            flat.ignored.append(refused)
            continue
        text = f"-e {line.text}" if line.editable else line.text
        if text not in lines:
            lines.append(text)
    constraints: list[str] = []
    for line in closure.constraints:
        if not applies(line, env) or line.is_local or line.text in constraints:
            continue
        refused = policy.check_requirement(line)
        if refused is not None:
            flat.ignored.append(refused)
            continue
        constraints.append(line.text)
    flat.requirements = "\n".join(lines) + "\n"
    flat.constraints = "\n".join(constraints) + "\n" if constraints else ""
    return flat


def _request(
    row: Row, closure: Closure, rules: RequirementsRules, policy: SourcePolicy
) -> ResolutionRequest:
    target = row.cell.target
    platform, _ = target.python_platform(row.cell.arch)
    env = marker_environment(row.cell.arch, row.cell.python)
    flat = flatten(closure, env, policy)
    options = tuple(rules.uv_options + target.rules.uv_options)
    return ResolutionRequest(
        flat.requirements, flat.constraints, row.cell.python, platform, options
    )


def resolve_rows(
    rows: list[Row],
    closures: dict[str, tuple[Closure, Closure]],
    rules: RequirementsRules,
    context: CheckContext,
    policy: SourcePolicy | None = None,
) -> int:
    """Set ``row.resolution`` on every row; returns how many times uv ran."""
    policy = policy or SourcePolicy(trusted=True)
    pending: list[Row] = []
    for row in rows:
        env = marker_environment(row.cell.arch, row.cell.python)
        row.ignored = flatten(closures[row.cell.target.name][1], env, policy).ignored
    for row in rows:
        target, arch = row.cell.target, row.cell.arch
        if not (rules.resolve and target.rules.resolve):
            row.resolution = Resolution("skipped", "resolution disabled by rules")
        elif row.problems:
            row.resolution = Resolution("skipped", "requirement files have errors (see problems)")
        elif not target.python_platform(arch)[1]:
            row.resolution = Resolution("skipped", f"uv has no --python-platform for {arch}")
        else:
            env = marker_environment(arch, row.cell.python)
            local = flatten(closures[target.name][1], env, policy).local
            if local:
                row.notes.append(f"not passed to uv: {', '.join(local)}")
            pending.append(row)
    if not pending:
        return 0
    resolver = resolver_for(context, rules)
    heads = [_request(row, closures[row.cell.target.name][1], rules, policy) for row in pending]
    for row, result in zip(pending, resolver.resolve_all(heads), strict=True):
        row.resolution = result
    failed = [row for row in pending if row.resolution and row.resolution.status == "failed"]
    bases = [_request(row, closures[row.cell.target.name][0], rules, policy) for row in failed]
    for row, result in zip(failed, resolver.resolve_all(bases), strict=True):
        if result.status == "failed":
            row.failing_at_base = True
            row.notes.append("already failing at base")
    return resolver.uv_runs
