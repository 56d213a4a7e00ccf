"""Every generated doc and hook the rules name, checked once: the loop the check and
``prbot docs`` share. Each caller decides what a doc that cannot be checked means to it (a
finding in a report, one error line in the terminal)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.core.sections import Cache, CommandRunner
from bot.core.snapshot import TreeReader
from bot.gendocs.config import DEFAULT_FIX_COMMAND, DocRule, GeneratedDocsRules, HookRule
from bot.gendocs.doc_check import DocResult, check_doc
from bot.gendocs.hooks import HookResult, run_hook
from bot.gendocs.render import TemplateError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocOutcome:
    """One doc's result (None: the doc is not in the head tree), or why it has none."""

    rule: DocRule
    result: DocResult | None = None
    problem: str | None = None


def check_docs(
    rules: GeneratedDocsRules,
    head: TreeReader,
    base: TreeReader | None = None,
    *,
    wanted: Callable[[DocRule], bool] = lambda rule: True,
    changed_paths: list[str] | None = None,
    cache: Cache | None = None,
    runner: CommandRunner | None = None,
    work_dir: Path | None = None,
    trusted: bool = True,
) -> list[DocOutcome]:
    """Check each doc ``wanted`` keeps; one that raises is an outcome, never a crash."""
    outcomes = []
    for rule in rules.docs:
        if not wanted(rule):
            continue
        try:
            result = check_doc(
                rule,
                head,
                base,
                changed_paths=changed_paths,
                cache=cache,
                runner=runner,
                work_dir=work_dir,
                trusted=trusted,
            )
        except TemplateError as exc:
            outcomes.append(DocOutcome(rule, problem=str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - one bad doc must not hide the others
            log.exception("generated docs: checking %s failed", rule.path)
            outcomes.append(DocOutcome(rule, problem=f"cannot check: {type(exc).__name__}: {exc}"))
            continue
        if result is not None:
            result.fix_command = fix_command(rule, head)
        outcomes.append(DocOutcome(rule, result))
    return outcomes


def fix_command(rule: DocRule, head: TreeReader) -> str:
    """What the reader runs to fix the doc: the rules' command, or, where the rules kept
    prbot's default, the repository's own generator script when the tree has one (prbot is
    not a dependency of the repository, so ``uv run prbot`` would not work there)."""
    if rule.fix_command != DEFAULT_FIX_COMMAND:
        return rule.fix_command
    # Only a generator that writes the doc fixes it; an mkdocs script fills it at build time.
    if rule.generators:
        scripts = [g.script for g in rule.generators if g.style == "output"]
    else:
        scripts = [path for path in rule.generator if path.endswith(".py")]
    for script in scripts:
        if head.exists(script):
            return f"python {script}"
    return rule.fix_command


def run_hooks(
    rules: GeneratedDocsRules,
    head: TreeReader,
    *,
    runner: CommandRunner | None,
    work_dir: Path,
    wanted: Callable[[HookRule], bool] = lambda hook: True,
    base: TreeReader | None = None,
    changed_paths: list[str] | None = None,
    trusted: bool = True,
    announce: Callable[[HookRule], None] | None = None,
) -> list[HookResult]:
    """Run each hook ``wanted`` keeps and compare its outputs with the committed files."""
    results: list[HookResult] = []
    for hook in rules.hooks:
        if not wanted(hook):
            continue
        if announce is not None:
            announce(hook)
        results.extend(
            run_hook(
                hook,
                head,
                runner=runner,
                work_dir=work_dir,
                base=base,
                changed_paths=changed_paths,
                trusted=trusted,
            )
        )
    return results
