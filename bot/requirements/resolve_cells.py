"""Resolving the affected cells: flatten each cell's input, run uv once per distinct input.

A cell that fails at head is also resolved at base (usually a cache hit, since every PR
against the same base shares it), so a failure the PR did not cause is told apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.requirements.config import RequirementsRules
from bot.requirements.effective import applies, marker_environment
from bot.requirements.graph import Closure
from bot.requirements.resolve import Resolution, ResolutionRequest, UvResolver

if TYPE_CHECKING:
    from bot.requirements.analysis import Row

# Option lines uv honours inside a requirements file; the rest are pip-only.
_PASSED_OPTIONS = {"index-url", "extra-index-url", "find-links", "no-index"}
_PASSED_OPTIONS |= {"no-binary", "only-binary"}


def uv_cache_dir(context: Any) -> Any:
    """A persistent uv cache the server may hand in (``extras["uv_cache_dir"]``)."""
    extras = getattr(context, "extras", None) or {}
    return extras.get("uv_cache_dir")


def flatten(closure: Closure, env: dict[str, str]) -> tuple[str, str, list[str]]:
    """(requirements text, constraints text, skipped local paths) for one environment.

    Only lines whose markers hold are kept, so a change that only touches aarch64 lines
    leaves the x86_64 input, and its cache entry, as it was.
    """
    lines: list[str] = []
    skipped: list[str] = []
    for option in closure.options:
        if option.option not in _PASSED_OPTIONS or option.text in lines:
            continue
        if option.option == "find-links" and not (option.value or "").startswith("http"):
            skipped.append(option.text)  # a local path means nothing outside the checkout
            continue
        lines.append(option.text)
    for line in closure.requirements:
        if not applies(line, env):
            continue
        if line.is_local:
            skipped.append(line.text)
            continue
        text = f"-e {line.text}" if line.editable else line.text
        if text not in lines:
            lines.append(text)
    constraints: list[str] = []
    for line in closure.constraints:
        if applies(line, env) and not line.is_local and line.text not in constraints:
            constraints.append(line.text)
    constraints_text = "\n".join(constraints) + "\n" if constraints else ""
    return "\n".join(lines) + "\n", constraints_text, skipped


def _request(row: Row, closure: Closure, rules: RequirementsRules) -> ResolutionRequest:
    target = row.cell.target
    platform, _ = target.python_platform(row.cell.arch)
    env = marker_environment(row.cell.arch, row.cell.python)
    requirements, constraints, _ = flatten(closure, env)
    options = tuple(rules.uv_options + target.rules.uv_options)
    return ResolutionRequest(requirements, constraints, row.cell.python, platform, options)


def resolve_rows(
    rows: list[Row],
    closures: dict[str, tuple[Closure, Closure]],
    rules: RequirementsRules,
    context: Any,
) -> int:
    """Set ``row.resolution`` on every row; returns how many times uv ran."""
    pending: list[Row] = []
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
            local = flatten(closures[target.name][1], env)[2]
            if local:
                row.notes.append(f"not passed to uv: {', '.join(local)}")
            pending.append(row)
    if not pending:
        return 0
    resolver = UvResolver(
        context.runner,
        context.cache,
        context.work_dir,
        timeout=rules.uv_timeout_seconds,
        http_timeout=rules.uv_http_timeout_seconds,
        max_parallel=rules.max_parallel,
        failure_ttl=rules.uv_failure_cache_seconds,
        cache_dir=uv_cache_dir(context),
    )
    heads = [_request(row, closures[row.cell.target.name][1], rules) for row in pending]
    for row, result in zip(pending, resolver.resolve_all(heads), strict=True):
        row.resolution = result
    failed = [row for row in pending if row.resolution and row.resolution.status == "failed"]
    bases = [_request(row, closures[row.cell.target.name][0], rules) for row in failed]
    for row, result in zip(failed, resolver.resolve_all(bases), strict=True):
        if result.status == "failed":
            row.failing_at_base = True
            row.notes.append("already failing at base")
    return resolver.uv_runs
