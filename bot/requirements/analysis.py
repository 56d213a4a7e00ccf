"""One PR's requirement analysis: which cells a change reaches, what they now get, and
whether it still resolves. Pure over two trees, except for uv behind :class:`UvResolver`.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterable
from typing import Any

from bot.core.globs import path_matches
from bot.core.sections import CheckContext
from bot.core.snapshot import Snapshot
from bot.gendocs.patch import unified_patch
from bot.local.git import GitError
from bot.requirements.compiled import CompiledFile, compiled_sources, find_compiled
from bot.requirements.config import RequirementsRules
from bot.requirements.consistency import PinConflict, pin_conflicts
from bot.requirements.effective import (
    diff_sets,
    effective_set,
    marker_environment,
)
from bot.requirements.graph import Closure, RequirementTree, reverse_index
from bot.requirements.matrix import Target, build_targets, cells
from bot.requirements.moves import base_paths, left_behind
from bot.requirements.rerun import rerun_compiled_file
from bot.requirements.resolve import resolver_for, scrub_paths, uv_binary
from bot.requirements.resolve_cells import resolve_rows
from bot.requirements.rows import Analysis, Row, StaleCompiled
from bot.requirements.sources import SourcePolicy
from bot.requirements.staleness import judge_in_trees
from bot.requirements.unreached import unreached_files

_REQUIREMENT_SUFFIXES = (".txt", ".in", ".toml")


def _changed_names(snapshot: Snapshot) -> set[str]:
    names = set()
    for changed in snapshot.files:
        names.add(changed.path)
        if changed.previous_path:
            names.add(changed.previous_path)
    return names


def _might_matter(changed: Iterable[str], rules: RequirementsRules) -> bool:
    globs = rules.watch + rules.compiled
    return any(
        path.endswith(_REQUIREMENT_SUFFIXES) or any(path_matches(path, g) for g in globs)
        for path in changed
    )


def analyse(snapshot: Snapshot, rules: RequirementsRules, context: CheckContext) -> Analysis:
    """Everything the requirements section says about one PR."""
    if not snapshot.trusted and "--no-build" not in rules.uv_options:
        # Resolving can run a source distribution's setup.py; for an untrusted author's
        # requirements that is their code. Wheels only, then: an sdist-only package fails
        # with uv's own hint instead of being built.
        rules = rules.model_copy(update={"uv_options": [*rules.uv_options, "--no-build"]})
    targets = build_targets(rules)
    if not targets:
        return Analysis(False, "no platforms declared in rules")
    changed = _changed_names(snapshot)
    if not _might_matter(changed, rules):
        return Analysis(False, "no requirement file changed")
    base_tree, head_tree = RequirementTree(snapshot.base), RequirementTree(snapshot.head)
    closures: dict[str, tuple[Closure, Closure]] = {}
    moves: dict[str, dict[str, str]] = {}
    kept: dict[str, dict[str, str]] = {}
    for t in targets:
        entries, moved = base_paths(t.rules.entries, snapshot.files, base_tree, head_tree)
        constraints, moved_c = base_paths(t.rules.constraints, snapshot.files, base_tree, head_tree)
        moves[t.name] = {**moved, **moved_c}
        kept[t.name] = {
            head: note
            for head, base in moves[t.name].items()
            if (note := left_behind(base, head, head_tree)) is not None
        }
        closures[t.name] = (
            base_tree.closure(entries, constraints),
            head_tree.closure(t.rules.entries, t.rules.constraints),
        )
    watched = sorted(p for p in changed if any(path_matches(p, g) for g in rules.watch))
    stale = _stale_compiled(base_tree, head_tree, snapshot, changed, rules)
    # The reverse include graph, at base and head (an include the PR removed still mattered).
    reached_by: dict[str, set[str]] = {}
    for side in (0, 1):
        for path, names in reverse_index({n: p[side] for n, p in closures.items()}).items():
            reached_by.setdefault(path, set()).update(names)
    why_by_target: dict[str, set[str]] = {}
    for path in changed & set(reached_by):
        for name in reached_by[path]:
            why_by_target.setdefault(name, set()).add(path)
    env = marker_environment("x86_64", (rules.python_versions or ["3.12"])[0])
    unreached, unreached_more = unreached_files(
        changed,
        set(reached_by),
        base_tree,
        head_tree,
        snapshot.head.list_paths(),
        rules.files,
        rules.mentions,
        env,
    )
    if not why_by_target and not watched and not stale and not unreached:
        return Analysis(False, "no changed file reaches any platform")

    analysis = Analysis(True, unreached=unreached, unreached_more=unreached_more)
    conflict_cache: dict[tuple[str, str, str], tuple[list[PinConflict], set[Any]]] = {}
    for cell in cells(targets, rules.python_versions):
        base_closure, head_closure = closures[cell.target.name]
        reaching = set(watched) if cell.target.rules.watched else set()
        why = sorted(why_by_target.get(cell.target.name, set()) | reaching)
        if not why:
            analysis.unaffected.append(cell.label)
            continue
        env = marker_environment(cell.arch, cell.python)
        row = Row(
            cell, why, diff_sets(effective_set(base_closure, env), effective_set(head_closure, env))
        )
        row.moved_entries = moves[cell.target.name]
        row.moved_left = kept[cell.target.name]
        row.only_watched = not why_by_target.get(cell.target.name)
        base_problems = {(p.file, p.message) for p in base_closure.problems}
        row.problems = [
            (p, (p.file, p.message) not in base_problems) for p in head_closure.problems
        ]
        key = (cell.target.group, cell.arch, cell.python)
        if key not in conflict_cache:
            conflict_cache[key] = _group_conflicts(targets, closures, cell.target.group, env)
        head_conflicts, base_keys = conflict_cache[key]
        row.conflicts = [
            (c, c.key() not in base_keys)
            for c in head_conflicts
            if any(f in head_closure.files for f, _, _ in c.lines)
        ]
        analysis.rows.append(row)

    _attach_compiled(analysis, stale)
    policy = _source_policy(snapshot, closures)
    analysis.uv_runs = resolve_rows(analysis.rows, closures, rules, context, policy)
    if rules.rerun_compiled and context.runner is not None:
        for item in [s for row in analysis.rows for s in row.compiled] + analysis.orphan_compiled:
            if item.rerun == "not run":
                _rerun(item, snapshot, rules, context, policy)
        _drop_proved_fresh(analysis)
    elif rules.rerun_compiled:
        for item in [s for row in analysis.rows for s in row.compiled] + analysis.orphan_compiled:
            if item.verdict == "may be stale":
                item.rerun_detail = "proving it takes uv, and no sandboxed runner is configured"
    analysis.rows.sort(key=_strength)
    return analysis


def _drop_proved_fresh(analysis: Analysis) -> None:
    """A re-run that gives the same file proves it is not stale; one that differs, that it is."""
    for item in [s for row in analysis.rows for s in row.compiled] + analysis.orphan_compiled:
        if item.rerun == "differs":
            item.verdict = "stale"
    for row in analysis.rows:
        row.compiled = [item for item in row.compiled if item.rerun != "same"]
    analysis.orphan_compiled = [item for item in analysis.orphan_compiled if item.rerun != "same"]


def _source_policy(
    snapshot: Snapshot, closures: dict[str, tuple[Closure, Closure]]
) -> SourcePolicy:
    """The author's trust, and the index options and URL lines the base already had."""
    base = [pair[0] for pair in closures.values()]
    return SourcePolicy.for_author(
        snapshot.trusted,
        [o for c in base for o in c.options],
        [r for c in base for r in c.requirements + c.constraints],
    )


def _group_conflicts(
    targets: list[Target],
    closures: dict[str, tuple[Closure, Closure]],
    group: str,
    env: dict[str, str],
) -> tuple[list[PinConflict], set[Any]]:
    members = [t.name for t in targets if t.group == group]

    def lines(side: int) -> list[Any]:
        out = []
        for name in members:
            closure = closures[name][side]
            out += closure.requirements + closure.constraints
        return out

    head = pin_conflicts(lines(1), env)
    base_keys = {c.key() for c in pin_conflicts(lines(0), env)}
    return head, base_keys


def _stale_compiled(
    base_tree: RequirementTree,
    head_tree: RequirementTree,
    snapshot: Snapshot,
    changed: set[str],
    rules: RequirementsRules,
) -> list[tuple[CompiledFile, StaleCompiled]]:
    """Compiled files whose changed inputs would change them (or may: see staleness)."""
    # A compiled file the PR changed is not stale by definition, so only unchanged ones (base
    # content, which the PR cannot multiply) are read.
    candidates = [
        p
        for p in snapshot.head.list_paths()
        if p not in changed and any(path_matches(p, g) for g in rules.compiled)
    ]
    found = []
    for compiled in find_compiled(head_tree, candidates):
        sources = [s for s in compiled_sources(compiled, head_tree) if s in changed]
        if not sources:
            continue
        staleness = judge_in_trees(compiled, base_tree, head_tree)
        if staleness.verdict is None:
            continue  # e.g. a constraint on a package nothing in this set requires
        item = StaleCompiled(compiled.path, sources, compiled=compiled)
        item.verdict, item.reasons = staleness.verdict, staleness.reasons
        if item.verdict == "may be stale" and not rules.rerun_compiled:
            item.rerun_detail = "proving it takes uv and the index; rerun_compiled is off"
        found.append((compiled, item))
    return found


def _attach_compiled(analysis: Analysis, stale: list[tuple[CompiledFile, StaleCompiled]]) -> None:
    for compiled, item in stale:
        owners = [
            row
            for row in analysis.rows
            if set(row.cell.target.rules.entries) & set(compiled.inputs)
        ]
        if owners:
            # One cell carries it; the others of the same set would only repeat it.
            owners[0].compiled.append(item)
        else:
            analysis.orphan_compiled.append(item)


def _rerun(
    item: StaleCompiled,
    snapshot: Snapshot,
    rules: RequirementsRules,
    context: CheckContext,
    policy: SourcePolicy,
) -> None:
    if item.compiled is None:
        return
    compiled = item.compiled
    resolver = resolver_for(context, rules)
    try:
        item.rerun, item.rerun_detail, fixed = rerun_compiled_file(
            compiled,
            snapshot.head,
            context.runner,
            uv_binary(),
            context.work_dir,
            resolver.environment(),
            extra_options=rules.uv_options,
            timeout=rules.uv_timeout_seconds,
            policy=policy,
        )
        if fixed is not None:
            item.fix_patch = unified_patch(
                compiled.path, snapshot.head.read_text(compiled.path) or "", fixed
            )
    except (GitError, OSError, tarfile.TarError) as exc:  # report, do not crash
        item.rerun, item.rerun_detail = "skipped", f"cannot re-run: {scrub_paths(str(exc))}"


def _strength(row: Row) -> tuple[int, ...]:
    resolution = row.resolution
    failed = resolution is not None and resolution.status == "failed" and not row.failing_at_base
    new_conflicts = sum(1 for _, new in row.conflicts if new)
    size = len(row.diff.added) + len(row.diff.removed) + len(row.diff.changed)
    return (
        -int(failed),
        -len(row.new_problems),
        -new_conflicts,
        -len(row.compiled),
        -size,
        0 if row.cell.target.kind == "runtime" else 1,
    )
