"""``issue_comment`` handler and the ``/recheck`` command, against the local GitHub server."""

from __future__ import annotations

import pytest

from bot.worker.handlers.issue_comment import on_issue_comment
from bot.worker.handlers.registry import Event

REPO = "acme/widgets"


@pytest.fixture
def pr(app_context, github_server):
    github_server.create_repo(REPO, installation_id=1, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"}, "change a")
    return github_server.open_pull_request(
        REPO, head_branch="feature", title="Change a", author="alice"
    )["number"]


def _comment(github_server, number: int, author: str, body: str) -> Event:
    comment = github_server.add_user_comment(REPO, number, author, body)
    payload = github_server.issue_comment_event(REPO, number, comment)
    return Event("issue_comment", "created", payload, delivery_id=comment["id"])


def _runs(ctx):
    return [job for job in ctx.queue.jobs(limit=100) if job.kind == "pipeline"]


def _replies(github_server, number):
    return [c["body"] for c in github_server.comments(REPO, number) if c["user"]["type"] == "Bot"]


def test_the_authors_recheck_queues_one_run_and_reacts(app_context, github_server, pr):
    event = _comment(github_server, pr, "alice", "/recheck flaky runner\n\n/recheck again")
    on_issue_comment(app_context, event)
    [run] = _runs(app_context)
    assert run.payload["pull"] is None  # the pipeline asks GitHub for the current head
    assert run.payload["reason"] == "/recheck flaky runner"
    assert run.payload["comment_id"] == event.payload["comment"]["id"]
    assert "eyes" in github_server.reactions(REPO, event.payload["comment"]["id"])


def test_a_stranger_is_refused_once_per_head(app_context, github_server, pr):
    for _ in range(2):
        on_issue_comment(app_context, _comment(github_server, pr, "mallory", "/recheck"))
    assert _runs(app_context) == []
    [reply] = _replies(github_server, pr)
    assert reply.startswith("@mallory only the PR author and people with write access")


def test_a_writer_may_recheck_someone_elses_pr(app_context, github_server, pr):
    github_server.set_permission(REPO, "maria", "write")
    on_issue_comment(app_context, _comment(github_server, pr, "maria", "/recheck"))
    assert len(_runs(app_context)) == 1


def test_help_and_near_misses_get_one_reply_per_comment(app_context, github_server, pr):
    event = _comment(github_server, pr, "alice", "/rechek")
    on_issue_comment(app_context, event)
    on_issue_comment(app_context, event)  # redelivered
    [reply] = _replies(github_server, pr)
    assert "did you mean" in reply and "/recheck" in reply
    on_issue_comment(app_context, _comment(github_server, pr, "mallory", "/prbot help"))
    assert "Commands you may use here" in _replies(github_server, pr)[-1]
    assert _runs(app_context) == []


@pytest.mark.parametrize(
    "body", ["no command here", "```\n/recheck\n```", "> /recheck", "/assign @bob"]
)
def test_comments_without_our_commands_do_nothing(app_context, github_server, pr, body):
    calls = len(github_server.calls)
    on_issue_comment(app_context, _comment(github_server, pr, "alice", body))
    assert _runs(app_context) == [] and _replies(github_server, pr) == []
    # Nothing was asked of GitHub either (add_user_comment is not an API call).
    assert len(github_server.calls) == calls


def test_a_comment_on_a_plain_issue_is_not_a_command(app_context, github_server, pr):
    event = _comment(github_server, pr, "alice", "/recheck")
    event.payload["issue"].pop("pull_request")
    on_issue_comment(app_context, event)
    assert _runs(app_context) == []


@pytest.fixture
def vllm_context(app_context):
    """The handler context with vLLM's built-in rules (a repository with no prbot.yml)."""
    import dataclasses

    from bot.worker.handlers.context import HandlerContext

    settings = dataclasses.replace(app_context.settings, default_rules="vllm")
    return HandlerContext(settings, app_context.engine, app_context.queue, app_context.app)


@pytest.mark.parametrize(
    "body",
    [
        "/ci run",  # vLLM's own: run_ci_command.py makes the full Buildkite build
        "/ci retry",
        "/ci cancel",
        "/amd-ci run",
        "/ci runn",
    ],
)
def test_other_bots_commands_get_no_reply_and_start_nothing(vllm_context, github_server, pr, body):
    github_server.set_permission(REPO, "maria", "write")
    calls = len(github_server.calls)
    on_issue_comment(vllm_context, _comment(github_server, pr, "maria", body))
    assert _replies(github_server, pr) == []
    assert vllm_context.queue.jobs(limit=100) == []
    # Not even a permission lookup: the comment holds nothing of prbot's.
    assert len(github_server.calls) == calls


def test_a_near_miss_of_prbots_own_command_gets_a_hint_as_typed(vllm_context, github_server, pr):
    on_issue_comment(vllm_context, _comment(github_server, pr, "alice", "/rechek now"))
    [reply] = _replies(github_server, pr)
    assert "`/rechek` is not a command here; did you mean `/recheck`?" in reply


def test_a_refusal_names_the_command_as_the_commenter_typed_it(vllm_context, github_server, pr):
    on_issue_comment(vllm_context, _comment(github_server, pr, "mallory", "/approve-gpu"))
    [reply] = _replies(github_server, pr)
    assert "`/approve-gpu`" in reply and "approve_gpu" not in reply
    on_issue_comment(vllm_context, _comment(github_server, pr, "mallory", "/prbot fix docs"))
    assert "`/prbot fix`" in _replies(github_server, pr)[-1]
