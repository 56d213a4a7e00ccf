"""A PR that changes .github/prbot.yml: its new file is validated in the report, while the
rules in force stay those at base."""

from __future__ import annotations

from bot.checks import Status
from bot.core.snapshot import snapshot_from_checkout
from bot.github.annotations import annotations_for
from bot.report.render import Report
from bot.report.runner import config_change_section

VALID = "extends: vllm\ncommands:\n  recheck:\n    aliases: [retest]\n"
INVALID = "extends: vllm\nchecks:\n  changed_files:\n    areas: 12\n"


def _snapshot(make_repo, base_files, head_files):
    repo = make_repo()
    base = repo.commit(base_files, "base")
    head = repo.commit(head_files, "head")
    return snapshot_from_checkout(repo.path, base, head, repo_name="acme/widgets", trusted=True)


def test_an_invalid_new_file_is_a_failure_with_file_line_field(make_repo):
    snapshot = _snapshot(
        make_repo, {"a.py": "x\n", ".github/prbot.yml": VALID}, {".github/prbot.yml": INVALID}
    )
    section = config_change_section(snapshot, "default")
    assert section.status == Status.FAIL
    assert ".github/prbot.yml:4: checks.changed_files.areas:" in section.summary
    assert "the base's rules were used" in section.summary
    [finding] = section.findings
    assert finding["line"] == 4 and finding["field"] == "checks.changed_files.areas"
    # ...which is also an annotation on that line of the PR's file.
    report = Report("acme/widgets", 1, snapshot.head_sha, snapshot.base_sha, [section])
    [annotation] = annotations_for(report)
    assert annotation["path"] == ".github/prbot.yml" and annotation["start_line"] == 4
    assert annotation["annotation_level"] == "failure"


def test_a_valid_new_file_and_untouched_files(make_repo):
    added = _snapshot(make_repo, {"a.py": "x\n"}, {".github/prbot.yml": VALID})
    assert config_change_section(added, "default").status == Status.PASS
    removed = _snapshot(make_repo, {".github/prbot.yml": VALID}, {".github/prbot.yml": None})
    section = config_change_section(removed, "default")
    assert section.status == Status.PASS and "removed" in section.summary
    untouched = _snapshot(make_repo, {".github/prbot.yml": INVALID}, {"a.py": "y\n"})
    assert config_change_section(untouched, "default") is None


def test_a_symbol_rule_without_added_is_caught_before_merge(make_repo):
    rule = (
        "extends: vllm\nchecks:\n  integration:\n    rules:\n      - name: x\n"
        "        paths: [a.py]\n        expect: [{where: w, paths: [b.py]}]\n"
    )
    snapshot = _snapshot(make_repo, {"a.py": "x\n"}, {".github/prbot.yml": rule})
    section = config_change_section(snapshot, "default")
    assert section.status == Status.FAIL and "needs `added`" in section.summary
