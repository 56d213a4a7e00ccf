"""Autofix end to end: a PR whose generated file drifts gets an "Apply fix" button on its
check run; ``/prbot fix`` or the button pushes one commit with exactly the report's patch
over the test server's git, or, where prbot may not push, posts the patch and says why."""

from __future__ import annotations

import itertools
import json
import sys

import pytest

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.report.render import MARKER

GENERATOR = """\
import os
names = sorted(n for n in os.listdir("pkg") if n.endswith(".py"))
with open("docs/modules.md", "w") as out:
    out.write("# Modules\\n\\n" + "".join(f"- {n}\\n" for n in names))
"""
IN_SYNC = "# Modules\n\n- a.py\n"
FIXED = "# Modules\n\n- a.py\n- b.py\n"

_names = itertools.count()


def rules_yaml(autofix: bool = True) -> str:
    hook = {
        "name": "modules",
        "command": [sys.executable, "tools/gen.py"],
        "outputs": ["docs/modules.md"],
        "feeds": ["pkg/**"],
        "tooling": ["tools/gen.py"],
        "timeout": 60,
    }
    rules = {"features": {"autofix": autofix}, "checks": {"generated_docs": {"hooks": [hook]}}}
    return json.dumps(rules)  # JSON is YAML


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with LocalStack(tmp_path_factory.mktemp("stack")) as running:
        yield running


def drifted_pr(
    stack, *, fork_owner=None, maintainer_can_modify=False, author="alice", autofix=True
):
    """A PR adding pkg/b.py without regenerating docs/modules.md, reported; (repo, number,
    head, check run)."""
    repo = f"acme/autofix-{next(_names)}"
    gh = stack.github
    gh.create_repo(
        repo,
        installation_id=INSTALLATION_ID,
        files={
            ".github/prbot.yml": rules_yaml(autofix),
            "tools/gen.py": GENERATOR,
            "pkg/a.py": "A = 1\n",
            "docs/modules.md": IN_SYNC,
        },
    )
    gh.set_permission(repo, "maintainer", "write")
    gh.set_permission(repo, "reader", "read")
    head = gh.commit(repo, "feature", {"pkg/b.py": "B = 2\n"}, "add b", author=author)
    number = gh.open_pull_request(
        repo,
        head_branch="feature",
        title="Add b",
        author=author,
        fork_owner=fork_owner,
        maintainer_can_modify=maintainer_can_modify,
    )["number"]
    stack.deliver("pull_request", gh.pull_request_event(repo, number, "opened"))
    run = wait_for(lambda: completed_run(stack, repo, head), what="completed check run")
    wait_for(stack.idle, what="idle queue")
    return repo, number, head, run


def completed_run(stack, repo, head):
    runs = [r for r in stack.github.check_runs(repo, head) if r["status"] == "completed"]
    return runs[0] if runs else None


def replies(stack, repo, number):
    return [
        c["body"]
        for c in stack.github.comments(repo, number)
        if c["user"]["type"] == "Bot" and MARKER not in c["body"]
    ]


def comment_fix(stack, repo, number, who, text="/prbot fix"):
    before = len(replies(stack, repo, number))
    comment = stack.github.add_user_comment(repo, number, who, text)
    payload = stack.github.issue_comment_event(repo, number, comment)
    assert stack.deliver("issue_comment", payload).status_code == 202
    wait_for(lambda: len(replies(stack, repo, number)) > before, what="a reply")
    wait_for(stack.idle, what="idle queue")
    return payload


def file_at(stack, repo, sha, path):
    return stack.github.repos[repo].git.git("show", f"{sha}:{path}")


def test_the_check_run_offers_the_fix_only_when_the_report_has_one(stack):
    repo, _, head, run = drifted_pr(stack)
    assert run["actions"] == [
        {
            "label": "Apply fix",
            "description": "Push the report's fix as one commit",
            "identifier": "prbot_fix",
        }
    ]
    assert run["conclusion"] == "failure"
    # An in-sync PR has no button.
    gh = stack.github
    gh.commit(repo, "synced", {"pkg/b.py": "B = 2\n", "docs/modules.md": FIXED}, "in sync")
    number = gh.open_pull_request(repo, head_branch="synced", title="Synced", author="alice")[
        "number"
    ]
    synced_head = gh.repos[repo].pulls[number].head_sha
    stack.deliver("pull_request", gh.pull_request_event(repo, number, "opened"))
    synced = wait_for(lambda: completed_run(stack, repo, synced_head), what="check run")
    assert synced["actions"] == [] and synced_head != head


def test_without_the_autofix_feature_there_is_no_button_and_no_push(stack):
    repo, number, head, run = drifted_pr(stack, autofix=False)
    assert run["actions"] == [] and run["conclusion"] == "failure"  # the drift is still said
    comment_fix(stack, repo, number, "maintainer")
    [reply] = replies(stack, repo, number)
    assert "autofix is off here (features.autofix in the rules)" in reply
    assert stack.github.repos[repo].pulls[number].head_sha == head  # nothing pushed


def test_prbot_fix_pushes_one_commit_with_the_reports_patch_once(stack):
    repo, number, head, _ = drifted_pr(stack)
    payload = comment_fix(stack, repo, number, "maintainer")
    [(branch, old, new)] = stack.github.pushes(repo)
    assert (branch, old) == ("feature", head)
    pull = stack.github.repos[repo].pulls[number]
    assert pull.head_sha == new
    # Exactly the report's patch: the regenerated file, nothing else, on top of the head.
    git = stack.github.repos[repo].git
    assert git.git("rev-parse", f"{new}^").strip() == head
    assert git.git("diff", "--name-only", head, new).split() == ["docs/modules.md"]
    assert file_at(stack, repo, new, "docs/modules.md") == FIXED
    info = git.commit_info(new)
    assert info["an"] == "prbot[bot]" and "Pushed-by: prbot autofix" in info["message"]
    [reply] = replies(stack, repo, number)
    assert f"prbot pushed `{new[:12]}`" in reply and "`docs/modules.md`" in reply
    # The same comment delivered again (GitHub's redelivery has a new GUID): no second push,
    # no second reply.
    stack.deliver("issue_comment", payload)
    wait_for(stack.idle, what="idle queue")
    assert len(stack.github.pushes(repo)) == 1
    assert len(replies(stack, repo, number)) == 1


def test_the_apply_fix_button_pushes_for_a_maintainer(stack):
    repo, number, head, run = drifted_pr(stack)
    payload = stack.github.check_run_event(
        repo, run["id"], "requested_action", sender="maintainer", identifier="prbot_fix"
    )
    assert stack.deliver("check_run", payload).status_code == 202
    wait_for(lambda: stack.github.pushes(repo), what="a push")
    wait_for(stack.idle, what="idle queue")
    [(_, old, new)] = stack.github.pushes(repo)
    assert old == head and file_at(stack, repo, new, "docs/modules.md") == FIXED
    stack.deliver("check_run", payload)  # pressed again for the same head: nothing more
    wait_for(stack.idle, what="idle queue")
    assert len(stack.github.pushes(repo)) == 1


def test_a_fork_that_allows_maintainer_edits_gets_the_push(stack):
    repo, number, head, _ = drifted_pr(stack, fork_owner="alice", maintainer_can_modify=True)
    comment_fix(stack, repo, number, "maintainer")
    [(_, old, new)] = stack.github.pushes(repo)
    assert old == head and file_at(stack, repo, new, "docs/modules.md") == FIXED


def test_a_fork_without_maintainer_edits_gets_the_patch_as_a_suggestion(stack):
    repo, number, _, _ = drifted_pr(stack, fork_owner="alice")
    comment_fix(stack, repo, number, "maintainer")
    assert stack.github.pushes(repo) == []
    [reply] = replies(stack, repo, number)
    assert "did not push the fix: the PR does not allow edits from maintainers" in reply
    assert "```diff" in reply and "+- b.py" in reply and "git apply" in reply


def test_no_push_for_a_reader_nothing_to_fix_a_bad_argument_or_a_moved_head(stack):
    # One PR, one refusal after another; none pushes.
    repo, number, _, run = drifted_pr(stack)
    comment_fix(stack, repo, number, "reader")  # the command's policy refuses a reader
    assert replies(stack, repo, number)[-1] == (
        "@reader only people with write access can run `/prbot fix` here."
    )
    # The button has no policy of its own: the job checks the presser's permission.
    payload = stack.github.check_run_event(
        repo, run["id"], "requested_action", sender="reader", identifier="prbot_fix"
    )
    stack.deliver("check_run", payload)
    wait_for(lambda: len(replies(stack, repo, number)) == 2, what="a reply")
    wait_for(stack.idle, what="idle queue")
    assert "needs write access" in replies(stack, repo, number)[-1]
    assert "```diff" in replies(stack, repo, number)[-1]
    comment_fix(stack, repo, number, "maintainer", "/prbot fix requirements")
    assert "has no requirements fix to apply" in replies(stack, repo, number)[-1]
    comment_fix(stack, repo, number, "maintainer", "/prbot fix everything")
    assert "'everything' is not something prbot fixes" in replies(stack, repo, number)[-1]
    moved = stack.github.push(repo, number, {"pkg/c.py": "C = 3\n"}, "more")
    comment_fix(stack, repo, number, "maintainer")
    last = replies(stack, repo, number)[-1]
    assert f"the head is now {moved[:12]}" in last and "```diff" in last
    assert stack.github.pushes(repo) == []
