"""Generic generator hooks: run a repository's own generator in a sandbox, compare outputs.

The command runs in a temporary copy of the head tree, with the *base* revision's copy of
the generator unless the PR's author is trusted (a PR must not get its own code run just
by editing the generator). The runner (``bot.local.sandbox.SandboxRunner``) scrubs the
environment and applies the timeout and the CPU and memory limits.
"""

from __future__ import annotations

import difflib
import itertools
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.core.globs import path_matches
from bot.core.sections import CommandRunner
from bot.core.snapshot import TreeReader
from bot.gendocs.config import HookRule
from bot.gendocs.generator import NOT_ISOLATED
from bot.gendocs.patch import unified_patch
from bot.gendocs.source import Problem, SplitsProblems
from bot.gendocs.tables import MISSING, CellDiff
from bot.local.git import GitError

# Line differences shown per output; the patch carries all of them.
MAX_LINE_CELLS = 20
_counter = itertools.count()


@dataclass
class HookResult(SplitsProblems):
    """The finding for one generated file (JSON: ``{path, in_sync, cells, ...}``)."""

    hook: str
    path: str
    command: list[str]
    cells: list[CellDiff] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    committed: bytes | None = None
    generated: bytes | None = None
    generator_changed: bool = False
    ran_generator_from: str = "head"
    fix_command: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def in_sync(self) -> bool:
        return not self.cells and not self.errors

    def patch(self) -> str:
        if self.generated is None or self.generated == self.committed:
            return ""
        old = (self.committed or b"").decode("utf-8", "replace")
        return unified_patch(self.path, old, self.generated.decode("utf-8", "replace"))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "in_sync": self.in_sync,
            "cells": [c.to_json() for c in self.cells],
            "kind": "hook",
            "hook": self.hook,
            "command": self.command,
            "problems": [p.to_json() for p in self.problems],
            # Same keys as a doc's finding, so the report template reads either.
            "manual_edits": [],
            "preview": [],
            "generator_changed": self.generator_changed,
            "ran_generator_from": self.ran_generator_from,
            "fix_command": self.fix_command,
            "patch": self.patch(),
            "notes": self.notes,
        }


def line_cells(path: str, committed: bytes | None, generated: bytes) -> list[CellDiff]:
    """Changed lines of a generated file, as cells (table: the file, row: the line)."""
    old = (committed or b"").decode("utf-8", "replace").splitlines()
    new = generated.decode("utf-8", "replace").splitlines()
    if committed is None:
        return [CellDiff(path, "(file)", "(file)", "present", MISSING, "table")]
    cells: list[CellDiff] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for offset in range(max(a1 - a0, b1 - b0)):
            actual = old[a0 + offset] if a0 + offset < a1 else MISSING
            expected = new[b0 + offset] if b0 + offset < b1 else "(none)"
            cells.append(CellDiff(path, f"line {a0 + offset + 1}", "line", expected, actual))
            if len(cells) >= MAX_LINE_CELLS:
                return cells
    return cells


def run_hook(
    hook: HookRule,
    head: TreeReader,
    *,
    runner: CommandRunner | None,
    work_dir: Path,
    base: TreeReader | None = None,
    changed_paths: list[str] | None = None,
    trusted: bool = True,
) -> list[HookResult]:
    """Run one hook against ``head`` and compare each output with the committed file."""
    changed = changed_paths or []
    generator_changed = any(path_matches(p, t) for p in changed for t in hook.tooling)
    results = [
        HookResult(
            hook.name,
            output,
            list(hook.command),
            generator_changed=generator_changed,
            fix_command=hook.fix_command or " ".join(hook.command),
            committed=head.read_bytes(output),
        )
        for output in hook.outputs
    ]
    if runner is None:
        return _fail_all(results, f"hook {hook.name} was not run: no sandbox runner")
    # A changed generator runs only for a trusted author, and only where the sandbox keeps it
    # from prbot's key, database and memory (NOT_ISOLATED says why otherwise).
    isolated = runner.isolated
    use_base_tooling = base is not None and generator_changed and not (trusted and isolated)
    tree = work_dir / f"hook-{_safe_name(hook.name)}-{next(_counter)}"
    wanted = [*hook.inputs, *hook.tooling, *hook.outputs] if hook.inputs else None
    try:
        head.export(tree, wanted)
        if use_base_tooling:
            for path in hook.tooling:
                _remove(tree, path)
            base.export(tree, list(hook.tooling))
    except (OSError, tarfile.TarError, GitError) as exc:
        # e.g. a symlink in the PR that points outside the tree: refused, and said so.
        return _fail_all(results, f"hook {hook.name} was not run: could not copy the tree: {exc}")
    for result in results:
        if generator_changed:
            result.ran_generator_from = "base" if use_base_tooling else "head"
            result.notes.append(
                "the PR changes this generator; "
                + (
                    "ran the PR's generator (the head is trusted)"
                    if not use_base_tooling
                    else "ran the base revision's generator (the author is not trusted)"
                    if not trusted
                    else f"ran the base revision's generator: {NOT_ISOLATED}"
                )
            )
    try:
        run = runner.run(list(hook.command), cwd=tree, timeout=hook.timeout, network=False)
    except OSError as exc:  # the command is missing or not executable: a finding, not a crash
        reason = exc.strerror or type(exc).__name__
        return _fail_all(results, f"hook {hook.name} could not start {hook.command[0]!r}: {reason}")
    failure = None
    if run.timed_out:
        failure = f"hook {hook.name} timed out after {hook.timeout:g}s"
    elif run.returncode not in hook.ok_exit_codes:
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        failure = f"hook {hook.name} exited with {run.returncode}" + (
            f": {' / '.join(tail)}" if tail else ""
        )
    for result in results:
        if failure:
            result.problems.append(Problem(result.path, failure))
            continue
        target = tree / result.path
        if target.is_symlink() or tree.resolve() not in target.resolve().parents:
            # Following it would read (and post) a file from outside the sandbox copy.
            message = f"hook {hook.name} ran, but its output is a symbolic link, not read"
            result.problems.append(Problem(result.path, message))
            continue
        if not target.is_file():
            result.problems.append(
                Problem(result.path, f"hook {hook.name} ran but did not produce this file")
            )
            continue
        result.generated = target.read_bytes()
        if result.generated != result.committed:
            result.cells = line_cells(result.path, result.committed, result.generated)
    return results


def _fail_all(results: list[HookResult], message: str) -> list[HookResult]:
    for result in results:
        result.problems.append(Problem(result.path, message))
    return results


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40] or "hook"


def _remove(root: Path, rel: str) -> None:
    target = root / rel
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
