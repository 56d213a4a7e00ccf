"""``pull_request`` handler: the head is recorded, the index kept, a run queued when needed."""

from __future__ import annotations

import pytest

from bot.store import state
from bot.store.open_prs import open_pr_count
from bot.worker.handlers.pull_request import on_pull_request
from bot.worker.handlers.registry import Event

REPO = "acme/widgets"


@pytest.fixture
def pull_event(github_server):
    github_server.add_installation(1, "acme")
    github_server.create_repo(REPO, installation_id=1, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"}, "change a")
    number = github_server.open_pull_request(
        REPO, head_branch="feature", title="Change a", body="Why not", author="alice"
    )["number"]

    def make(action: str) -> Event:
        payload = github_server.pull_request_event(REPO, number, action)
        return Event("pull_request", action, payload, delivery_id=1)

    return make


def _jobs(ctx, kind):
    return [job for job in ctx.queue.jobs(limit=100) if job.kind == kind]


def test_opened_records_the_head_indexes_the_pr_and_queues_one_run(handler_context, pull_event):
    event = pull_event("opened")
    on_pull_request(handler_context, event)
    on_pull_request(handler_context, event)  # a redelivery coalesces into the same run
    pull = event.payload["pull_request"]
    assert state.current_head(handler_context.engine, REPO, pull["number"]) == pull["head"]["sha"]
    assert open_pr_count(handler_context.engine, REPO) == 1
    [run] = _jobs(handler_context, "pipeline")
    assert run.payload["pull"]["head_sha"] == pull["head"]["sha"]
    assert run.payload["reason"] == "pull_request.opened"
    assert run.payload["html_base"].startswith("http://127.0.0.1")
    # The repository was never listed: its other open PRs are fetched once (installation 1).
    assert [j.payload for j in _jobs(handler_context, "reconcile")] == [
        {"repo": REPO, "installation_id": 1}
    ]


@pytest.mark.parametrize("action", ["closed", "labeled"])
def test_actions_that_change_no_check_queue_no_run(handler_context, pull_event, action):
    on_pull_request(handler_context, pull_event(action))
    assert _jobs(handler_context, "pipeline") == []
    if action == "closed":
        assert open_pr_count(handler_context.engine, REPO) == 0


def test_a_late_event_for_a_replaced_head_leaves_the_newer_run_in_line(
    handler_context, pull_event, github_server
):
    older = pull_event("opened")
    number = older.payload["pull_request"]["number"]
    github_server.push(REPO, number, {"a.py": "x = 3\n"})
    newer = pull_event("synchronize")
    newer.payload["pull_request"]["updated_at"] = "2030-01-01T00:00:00Z"  # clearly later
    on_pull_request(handler_context, newer)
    # GitHub's redelivery of the first event, handled only now (the crash run found it).
    on_pull_request(handler_context, older)
    head = newer.payload["pull_request"]["head"]["sha"]
    assert head != older.payload["pull_request"]["head"]["sha"]
    assert state.current_head(handler_context.engine, REPO, number) == head
    [run] = _jobs(handler_context, "pipeline")
    assert run.payload["pull"]["head_sha"] == head


def _pushes_in_one_second(ctx, pull_event, github_server):
    first = pull_event("opened")
    number = first.payload["pull_request"]["number"]
    github_server.push(REPO, number, {"a.py": "x = 3\n"})
    second = pull_event("synchronize")
    second.payload["pull_request"]["updated_at"] = first.payload["pull_request"]["updated_at"]
    on_pull_request(ctx, second)
    on_pull_request(ctx, first)  # handled last, yet GitHub's head is `second`'s
    [run] = _jobs(ctx, "pipeline")
    assert run.payload["number"] == number
    return first, run


def test_a_push_in_the_same_second_from_the_stored_head_runs_its_own_head(
    app_context, pull_event, github_server
):
    first = pull_event("opened")
    number = first.payload["pull_request"]["number"]
    on_pull_request(app_context, first)
    github_server.push(REPO, number, {"a.py": "x = 3\n"})
    second = pull_event("synchronize")  # its `before` is the first head
    second.payload["pull_request"]["updated_at"] = first.payload["pull_request"]["updated_at"]
    on_pull_request(app_context, second)
    [run] = _jobs(app_context, "pipeline")
    assert run.payload["pull"]["head_sha"] == second.payload["pull_request"]["head"]["sha"]


def test_two_pushes_in_one_second_make_the_run_ask_github_for_the_head(
    app_context, pull_event, github_server
):
    _, run = _pushes_in_one_second(app_context, pull_event, github_server)
    assert run.payload["pull"] is None  # the pipeline asks GitHub (/recheck's way)


def test_without_an_app_a_tie_runs_the_events_head(handler_context, pull_event, github_server):
    first, run = _pushes_in_one_second(handler_context, pull_event, github_server)
    assert run.payload["pull"]["head_sha"] == first.payload["pull_request"]["head"]["sha"]
