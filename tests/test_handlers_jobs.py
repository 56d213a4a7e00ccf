"""The job handlers: ``delivery`` (a stored webhook to its event's handlers), ``pipeline``
(fetch, check, store, publish) and ``reconcile`` (list open PRs), on real servers."""

from __future__ import annotations

import dataclasses
import json

import pytest

from bot.github.pulls import parse_time, pull_summary
from bot.report.render import MARKER
from bot.store import deliveries, state
from bot.worker.handlers.delivery import handle_delivery
from bot.worker.handlers.pipeline import run_pipeline
from bot.worker.handlers.reconcile import reconcile_open_prs

REPO = "acme/widgets"


@pytest.fixture
def pull(github_server):
    github_server.add_installation(1, "acme")
    github_server.create_repo(REPO, installation_id=1, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"}, "change a")
    number = github_server.open_pull_request(
        REPO, head_branch="feature", title="Change a", author="alice"
    )["number"]
    return github_server.pull_request_event(REPO, number, "opened")


def _pipeline_job(ctx, event: dict) -> dict:
    ctx.enqueue_pipeline(event, pull_summary(event["pull_request"]), reason="test")
    [job] = [j for j in ctx.queue.jobs() if j.kind == "pipeline"]
    return job.payload


def test_a_stored_delivery_reaches_its_events_handlers(handler_context, pull):
    body = json.dumps(pull).encode()
    assert deliveries.record_delivery(
        handler_context.engine,
        guid="g-1",
        event="pull_request",
        action="opened",
        repo=REPO,
        installation_id=1,
        body=body,
    )
    [job] = [j for j in handler_context.queue.jobs() if j.kind == "delivery"]
    handle_delivery(handler_context, job.payload)
    assert [j.kind for j in handler_context.queue.jobs() if j.kind == "pipeline"] == ["pipeline"]
    with pytest.raises(LookupError, match="missing"):
        handle_delivery(handler_context, {"delivery_id": 987654})


def test_the_pipeline_stores_the_report_and_in_dry_run_publishes_nothing(
    app_context, github_server, pull
):
    app_context.settings = dataclasses.replace(app_context.settings, dry_run=True)
    github_server.reset_calls()
    run_pipeline(app_context, _pipeline_job(app_context, pull))
    number, head = pull["number"], pull["pull_request"]["head"]["sha"]
    saved = state.latest_report(app_context.engine, REPO, number)
    assert saved["head_sha"] == head and MARKER in saved["markdown"]
    assert saved["report"]["sections"], "every check ran"
    assert github_server.count_calls("POST", f"/repos/{REPO}/issues/{number}/comments") == 0


def test_the_pipeline_publishes_one_comment_and_a_check_run(app_context, github_server, pull):
    job = _pipeline_job(app_context, pull)
    run_pipeline(app_context, job)
    run_pipeline(app_context, job)  # a retry edits what the first run made
    number = pull["number"]
    comments = [c for c in github_server.comments(REPO, number) if MARKER in c["body"]]
    assert len(comments) == 1
    head = pull["pull_request"]["head"]["sha"]
    assert f"prbot:head={head}" in comments[0]["body"]


def test_a_superseded_head_is_skipped(handler_context, github_server, pull):
    job = _pipeline_job(handler_context, pull)
    state.observe_head(handler_context.engine, REPO, pull["number"], "f" * 40, parse_time(None))
    run_pipeline(handler_context, job)
    assert state.latest_report(handler_context.engine, REPO, pull["number"]) is None


def test_reconcile_lists_open_prs_and_comes_back_later(app_context, github_server, pull):
    from bot.store.open_prs import open_pr_count

    reconcile_open_prs(app_context, {"repo": REPO, "installation_id": 1})
    assert open_pr_count(app_context.engine, REPO) == 1
    [again] = [j for j in app_context.queue.jobs() if j.kind == "reconcile"]
    assert again.run_after > again.created_at  # the next round, hours ahead


def test_reconcile_without_an_app_does_nothing(handler_context):
    reconcile_open_prs(handler_context, {"repo": REPO, "installation_id": 1})
    assert handler_context.queue.jobs() == []
