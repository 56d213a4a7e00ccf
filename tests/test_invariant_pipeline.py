"""Pipeline promises the README makes: a PR cannot change its own policy."""

from __future__ import annotations

from invariant_helpers import REPO, comment_for_head, create_repo, head_of

from bot.cli.demo_stack import LocalStack, wait_for
from bot.store import state


def test_rules_are_read_at_the_base_so_a_pr_cannot_relax_its_own(tmp_path):
    with LocalStack(tmp_path / "stack") as stack:
        create_repo(stack)
        gh = stack.github
        relaxing = "checks:\n  changed_files:\n    enabled: false\n"
        gh.commit(REPO, "relax", {".github/prbot.yml": relaxing, "widgets/core.py": "x = 9\n"})
        number = gh.open_pull_request(REPO, head_branch="relax", title="Quiet the bot")["number"]
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        head = head_of(gh, number)
        wait_for(lambda: comment_for_head(gh, number, head), what="the report")
        wait_for(stack.idle, what="idle queue")
        report = state.latest_report(stack.service.engine, REPO, number)["report"]
        sections = {s["check"]: s for s in report["sections"]}
        # The head's file is validated and reported on, but never put in force.
        if "rules" in sections:
            assert sections["rules"]["status"] == "pass"
            assert "in force" in sections["rules"]["summary"]
        assert sections["changed_files"]["status"] != "skip"
        assert "widgets/core.py" in str(sections["changed_files"]["findings"])
