"""Command promises: fences close only on their own kind, and bots' comments are never commands."""

from __future__ import annotations

import httpx
import pytest
from invariant_helpers import REPO, bot_replies, create_repo, jobs_of_kind, open_pr

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.events.commands import Command, parse_commands


@pytest.mark.parametrize(
    "body",
    [
        "```\n~~~\n/recheck\n```",
        "~~~\n```\n/recheck\n~~~",
        "````\n```\n/recheck\n````",  # a shorter fence of the same kind does not close either
        "~~~~\n~~~\n/recheck\n~~~~",
    ],
    ids=["tilde-in-backticks", "backticks-in-tilde", "short-backticks", "short-tildes"],
)
def test_a_fence_closes_only_on_its_own_kind(body):
    assert parse_commands(body) == []
    # After the real closing fence, commands count again.
    assert parse_commands(body + "\n/recheck now") == [Command("recheck", "now")]


@pytest.fixture
def stack(tmp_path):
    with LocalStack(tmp_path / "stack") as running:
        create_repo(running)
        yield running


def test_bots_comments_are_never_commands(stack):
    gh = stack.github
    number = open_pr(stack, author="alice")
    token = gh.create_installation_token(INSTALLATION_ID)
    # prbot's own comment, as GitHub delivers it back (a Bot user, via our App).
    own = httpx.post(
        f"{gh.url}/repos/{REPO}/issues/{number}/comments",
        json={"body": "To run me again, comment:\n\n/recheck"},
        headers={"Authorization": f"token {token}"},
    ).json()
    own_event = gh.issue_comment_event(REPO, number, own)
    assert own_event["comment"]["user"]["type"] == "Bot"
    # Another bot account (no App attribution, not in trust.bots), and an App acting for the
    # PR's own author.
    other_bot = gh.issue_comment_event(REPO, number, own)
    other_bot["comment"]["user"] = gh.shapes.user("mergify[bot]", bot=True)
    other_bot["comment"]["performed_via_github_app"] = None
    via_app = gh.issue_comment_event(REPO, number, own)
    via_app["comment"]["user"] = gh.shapes.user("alice")
    assert via_app["comment"]["performed_via_github_app"] is not None

    for event in (own_event, other_bot, via_app):
        assert stack.deliver("issue_comment", event).status_code == 202
    wait_for(lambda: len(jobs_of_kind(stack, "delivery")) == 3, what="three deliveries")
    wait_for(stack.idle, what="idle queue")
    # Each was read and dropped: done, not failed on the way to a refusal.
    deliveries = jobs_of_kind(stack, "delivery")
    assert [(j.state, j.last_error) for j in deliveries] == [("done", None)] * 3
    assert jobs_of_kind(stack, "pipeline") == []
    assert gh.reactions(REPO, own["id"]) == [] and bot_replies(gh, number) == [own]

    # The same words from the author herself are a command: the path above was live.
    human = gh.add_user_comment(REPO, number, "alice", "/recheck")
    stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, human))
    wait_for(lambda: jobs_of_kind(stack, "pipeline"), what="the author's recheck")
    wait_for(stack.idle, what="idle queue")
    assert "eyes" in gh.reactions(REPO, human["id"])


# A line right after a quote, with no blank line between, is the quote's lazy continuation in
# CommonMark and renders inside the quote on GitHub (fixed by reading comments with markdown-it).
def test_a_command_on_a_quotes_continuation_line_is_quoted():
    assert parse_commands("> you asked for a\n/recheck") == []


# GitHub renders "- <!-- a note" as a list item holding an HTML block; the browser's comment
# then runs to the end of the page, so the /recheck below it is invisible there. On main,
# whose parser ended the comment with the list item, the hidden line ran (issue 21, item 12).
def test_a_command_an_unclosed_comment_hides_on_github_does_nothing(stack):
    gh = stack.github
    number = open_pr(stack, author="alice")
    hidden = gh.add_user_comment(REPO, number, "alice", "Thanks!\n\n- <!-- a note\n\n/recheck\n")
    answer = stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, hidden))
    assert answer.status_code == 202
    wait_for(lambda: len(jobs_of_kind(stack, "delivery")) == 1, what="the delivery")
    wait_for(stack.idle, what="idle queue")
    assert [j.state for j in jobs_of_kind(stack, "delivery")] == ["done"]
    assert jobs_of_kind(stack, "pipeline") == [] and gh.reactions(REPO, hidden["id"]) == []

    # The note closed, the same line is shown on GitHub and runs: the path above was live.
    shown = gh.add_user_comment(REPO, number, "alice", "Thanks!\n\n- <!-- a note -->\n\n/recheck\n")
    stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, shown))
    wait_for(lambda: jobs_of_kind(stack, "pipeline"), what="the shown recheck")
    wait_for(stack.idle, what="idle queue")
    assert "eyes" in gh.reactions(REPO, shown["id"])
