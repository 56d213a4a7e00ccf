"""From one PR head to one report: the single path the server and every CLI command take.

1. :func:`load_rules`: the repository's ``.github/prbot.yml`` at base over a built-in set (or
   a rule file named on the command line). The one place rules are read.
2. :func:`decide_trust`: whether the head's author is trusted, from those rules. Decided once,
   before the :class:`~bot.core.snapshot.Snapshot` is built, which is then immutable.
3. :func:`run_checks`: every registered check over the snapshot with one frozen
   :class:`~bot.checks.CheckContext`. A check that raises becomes an ``error`` section.
4. :func:`build_report`: 1–3 plus what the rules themselves say (an invalid file, a changed
   one), as a :class:`~bot.report.render.Report`. Rendering is a separate step
   (``bot.report.render``).

Nothing here does I/O of its own: trees, runners and caches come in from the edges
(docs/architecture.md).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bot.checks import Check, CheckContext, Section, Status, all_checks
from bot.core.limits import InputRejected
from bot.core.snapshot import Snapshot, TreeReader
from bot.events.permissions import is_trusted
from bot.report import rules as rules_module
from bot.report.render import Report

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedRules:
    """The rules in force for one run, and what went wrong reading the repository's file."""

    ruleset: Any  # an instance of bot.report.rules.rule_set_model()
    # The repository's file was invalid, so ``default`` was used; shown in the report.
    error: str | None = None


def load_rules(
    repo_file_text: str | None,
    *,
    default: str = "default",
    rules_file: Path | str | None = None,
    strict: bool = False,
) -> LoadedRules:
    """The rules for one run: ``rules_file`` if given, else the repository's file over the
    built-in ``default``. An invalid repository file falls back to ``default`` with the
    error kept (the service), or raises :class:`~bot.report.rules.RulesError` when
    ``strict`` (the CLI)."""
    if rules_file is not None:
        return LoadedRules(rules_module.load_file(rules_file))
    try:
        return LoadedRules(rules_module.for_repository(repo_file_text, default=default))
    except rules_module.RulesError as exc:
        if strict:
            raise
        return LoadedRules(rules_module.load_builtin(default), error=str(exc))


def rules_from_tree(
    base: TreeReader, *, default: str = "default", strict: bool = False
) -> LoadedRules:
    """:func:`load_rules` with the repository's file read from ``base``."""
    return load_rules(base.read_text(rules_module.REPO_RULES_PATH), default=default, strict=strict)


def decide_trust(author_association: str | None, ruleset: Any, *, local: bool = False) -> bool:
    """Whether this head may run what only trusted heads run (generators, sdist builds, GPU
    jobs). ``local``: the person running ``prbot check`` on their own checkout is its owner."""
    if local:
        return True
    return is_trusted(author_association, ruleset.trust.trusted_associations)


def rules_for_check(check: Check, ruleset: Any) -> BaseModel:
    """A check's own rules; a check the rule set does not know (one registered from another
    package) runs with its model's defaults."""
    return getattr(ruleset.checks, check.name, None) or check.rules_model()


def run_check(check: Check, snapshot: Snapshot, ruleset: Any, context: CheckContext) -> Section:
    """Run one check; whatever it raises becomes an ``error`` section, never a crash."""
    check_rules = rules_for_check(check, ruleset)
    if not check_rules.enabled:
        return Section(check.name, Status.SKIP, "disabled by rules")
    try:
        section = check.run(snapshot, check_rules, context)
    except InputRejected as exc:
        # A file over a bound is what the PR did, not a crash: its one line is the finding.
        # Still an error: a check that could not read the PR has not verified it.
        log.warning("check %s on %s@%s: %s", check.name, snapshot.repo, snapshot.head_sha, exc)
        return Section(check.name, Status.ERROR, str(exc), data={"rejected": exc.path})
    except MemoryError:
        # Logged without a traceback: formatting one needs the memory that just ran out.
        log.error(
            "check %s ran out of memory on %s@%s", check.name, snapshot.repo, snapshot.head_sha
        )
        return Section(check.name, Status.ERROR, "check ran out of memory on this PR; not verified")
    except RecursionError:
        log.error(
            "check %s recursed too deeply on %s@%s", check.name, snapshot.repo, snapshot.head_sha
        )
        return Section(
            check.name, Status.ERROR, "check hit the recursion limit on this PR; not verified"
        )
    except Exception as exc:  # noqa: BLE001 - one check failing must not stop the others
        log.error(
            "check %s failed on %s@%s\n%s",
            check.name,
            snapshot.repo,
            snapshot.head_sha,
            traceback.format_exc(),
        )
        return Section(check.name, Status.ERROR, f"check crashed: {type(exc).__name__}: {exc}")
    if not isinstance(section, Section):
        return Section(check.name, Status.ERROR, "check returned no section")
    return section


# Called before each check with its title, so a terminal can say what is running.
ProgressHook = Callable[[Check], None]


def run_checks(
    snapshot: Snapshot,
    ruleset: Any,
    context: CheckContext,
    checks: tuple[Check, ...] | None = None,
    *,
    progress: ProgressHook | None = None,
) -> Report:
    """Every check (or ``checks``) over ``snapshot``, in report order."""
    report = Report(snapshot.repo, snapshot.number, snapshot.head_sha, snapshot.base_sha)
    for check in checks if checks is not None else all_checks():
        if progress is not None:
            progress(check)
        report.sections.append(run_check(check, snapshot, ruleset, context))
    return report


def config_change_section(snapshot: Snapshot, default_rules: str) -> Section | None:
    """When the PR changes ``.github/prbot.yml``: is the *new* file valid? The rules in force
    stay those at base; this says now what would otherwise fail only after the merge."""
    path = rules_module.REPO_RULES_PATH
    if not any(path in (f.path, f.previous_path) for f in snapshot.files):
        return None
    try:
        text = snapshot.head.read_text(path)
    except InputRejected as exc:
        return Section("rules", Status.FAIL, f"{path} as changed by this PR: {exc}")
    if text is None:
        return Section("rules", Status.PASS, f"{path} removed: after merge the defaults apply")
    try:
        rules_module.for_repository(text, default=default_rules)
    except rules_module.RulesError as exc:
        finding = {"path": path, "line": exc.line, "field": exc.field, "message": exc.problem}
        return Section(
            "rules",
            Status.FAIL,
            f"{path} as changed by this PR is invalid: {exc} (the base's rules were used)",
            findings=[finding],
        )
    return Section(
        "rules", Status.PASS, f"{path} as changed by this PR is valid (in force after merge)"
    )


def build_report(
    snapshot: Snapshot,
    loaded: LoadedRules,
    context: CheckContext,
    *,
    default_rules: str = "default",
    checks: tuple[Check, ...] | None = None,
    progress: ProgressHook | None = None,
) -> Report:
    """The whole report for one head: the checks, then what the rules files say."""
    report = run_checks(snapshot, loaded.ruleset, context, checks, progress=progress)
    changed = config_change_section(snapshot, default_rules)
    if changed is not None:
        report.sections.insert(0, changed)
    if loaded.error:
        report.sections.insert(
            0,
            Section(
                "rules",
                Status.ERROR,
                f"{rules_module.REPO_RULES_PATH} is invalid, defaults used: {loaded.error}",
            ),
        )
    return report
