"""A PR that changes .github/prbot.yml: its new file is validated in the report, while the
rules in force stay those at base."""

from __future__ import annotations

from invariant_helpers import REPO, report_comments

from bot.checks import Status
from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.core.snapshot import snapshot_from_checkout
from bot.github.annotations import annotations_for
from bot.report.render import Report
from bot.report.rules import MAX_ALIASES
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


def _alias_bomb(levels: int) -> str:
    """Two aliases a level, each level a mapping of the one before twice: 2**levels leaves
    from a few hundred characters, inside the 50-alias bound that was the only one before."""
    lines = ["extends: default", "x0: &a0 {a: boom, b: boom}"]
    lines += [f"x{i}: &a{i} {{a: *a{i - 1}, b: *a{i - 1}}}" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_the_prs_rule_file_is_a_finding_naming_its_line(tmp_path):
    # On main this file (22 levels, 42 aliases) was expanded into a tree of 4 million leaves
    # on every push before validation refused its keys: 48 s of the worker (issue 21, item 4).
    bomb = _alias_bomb(22)
    assert bomb.count("*") <= MAX_ALIASES and len(bomb) < 1_000
    with LocalStack(tmp_path / "stack") as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        gh.commit(REPO, "feature", {".github/prbot.yml": bomb}, "rules")
        number = gh.open_pull_request(
            REPO, head_branch="feature", title="Rules", body="New rules.", author="alice"
        )["number"]
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        [comment] = wait_for(lambda: report_comments(gh, number), what="the report")
        wait_for(stack.idle, what="idle queue")
    body = comment["body"]
    assert ".github/prbot.yml:" in body and "expands to more than 100,000 nodes" in body
    assert "Changed files" in body  # the other checks ran, on the base's rules
