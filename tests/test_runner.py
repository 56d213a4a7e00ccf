"""The one runner: rules loaded once, trust decided once, checks run, rules problems reported."""

from __future__ import annotations

import dataclasses

import pytest

from bot.checks import Status, all_checks
from bot.core.snapshot import GitTree, snapshot_from_checkout
from bot.report import rules
from bot.report.runner import (
    build_report,
    decide_trust,
    load_rules,
    rules_from_tree,
)

INVALID = "version: 1\nchecks:\n  duplicates:\n    no_such_key: 1\n"


def test_the_repository_file_is_layered_over_the_named_built_in_set():
    loaded = load_rules("checks:\n  changed_files:\n    enabled: false\n", default="vllm")
    assert loaded.error is None
    assert not loaded.ruleset.checks.changed_files.enabled
    assert loaded.ruleset.checks.generated_docs.docs  # from the vllm set underneath


def test_an_invalid_file_falls_back_to_the_defaults_with_the_error_kept_or_raises_when_strict():
    loaded = load_rules(INVALID, default="default")
    assert loaded.ruleset == rules.load_builtin("default")
    assert "no_such_key" in loaded.error
    with pytest.raises(rules.RulesError, match="no_such_key"):
        load_rules(INVALID, strict=True)


def test_a_rules_file_named_on_the_command_line_wins(tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text("extends: vllm\nchecks:\n  review:\n    enabled: false\n")
    loaded = load_rules("ignored: true", rules_file=path)
    assert not loaded.ruleset.checks.review.enabled


def test_trust_comes_from_the_rules_or_the_local_run():
    ruleset = rules.load_builtin("default")
    assert decide_trust("MEMBER", ruleset) and decide_trust("owner", ruleset)
    assert not decide_trust("CONTRIBUTOR", ruleset) and not decide_trust(None, ruleset)
    assert decide_trust(None, None, local=True)


def test_build_report_says_when_the_base_rules_are_invalid_and_checks_a_changed_file(
    git_repo, check_context
):
    base = git_repo.commit({rules.REPO_RULES_PATH: INVALID, "a.py": "x = 1\n"})
    head = git_repo.commit({rules.REPO_RULES_PATH: "version: 2\n"})
    tree = GitTree(git_repo.path, base)
    try:
        loaded = rules_from_tree(tree)
    finally:
        tree.close()
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=False)
    checks = tuple(c for c in all_checks() if c.name == "changed_files")
    progress: list[str] = []
    report = build_report(
        snapshot, loaded, check_context, checks=checks, progress=lambda c: progress.append(c.name)
    )
    snapshot.close()
    assert progress == ["changed_files"]
    invalid, changed, ran = report.sections
    assert (invalid.check, invalid.status) == ("rules", Status.ERROR)
    assert "defaults used" in invalid.summary
    assert (changed.check, changed.status) == ("rules", Status.FAIL)
    assert changed.findings[0]["path"] == rules.REPO_RULES_PATH
    assert ran.check == "changed_files"


def test_a_snapshot_cannot_be_changed_once_built(git_repo):
    base = git_repo.commit({"a.py": "x = 1\n"})
    head = git_repo.commit({"a.py": "x = 2\n"})
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.trusted = True  # type: ignore[misc]
    snapshot.close()
