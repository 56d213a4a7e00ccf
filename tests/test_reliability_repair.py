"""Missed deliveries: prbot is down during a burst; on its next repair run it redelivers
exactly what it lost (through GitHub's deliveries API on the local test server), the PRs get
their one report each, and a later run costs one conditional request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.cli.demo_stack import INSTALLATION_ID, WEBHOOK_SECRET, LocalStack, wait_for
from bot.events.webhooks import HANDLED_ACTIONS
from bot.repair.deliveries import HookAttempt, choose_redeliveries, next_page_url, parse_attempts
from bot.repair.reconcile import reconcile
from bot.repair.redeliver import repair_deliveries, sweep_heads
from bot.report.render import MARKER

REPO = "acme/widgets"
DOWN = "http://127.0.0.1:9/webhooks/github"  # nothing listens on the discard port
SPACING = timedelta(minutes=10)


@pytest.fixture
def stack(tmp_path):
    with LocalStack(tmp_path / "stack") as running:
        running.github.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x\n"})
        yield running


def _reports(stack, number):
    return [
        c
        for c in stack.github.comments(REPO, number)
        if MARKER in c["body"] and c["user"]["type"] == "Bot"
    ]


def _open(stack, branch):
    gh = stack.github
    gh.commit(REPO, branch, {f"{branch}.py": "y = 1\n"})
    return gh.open_pull_request(REPO, head_branch=branch, title=f"Add {branch}")["number"]


def test_deliveries_lost_while_down_are_redelivered_once(stack):
    gh = stack.github
    app = stack.service.app
    # Up: one PR delivered normally.
    gh.configure_hook(stack.webhook_url, WEBHOOK_SECRET)
    first = _open(stack, "first")
    assert gh.send_webhook("pull_request", gh.pull_request_event(REPO, first, "opened"))
    wait_for(lambda: _reports(stack, first), what="first report")
    # Down: a burst of PRs, a comment on an issue-less event and a ping; none arrives.
    gh.configure_hook(DOWN, WEBHOOK_SECRET)
    burst = [_open(stack, f"burst{i}") for i in range(4)]
    lost = [
        gh.send_webhook("pull_request", gh.pull_request_event(REPO, n, "opened")) for n in burst
    ]
    gh.send_webhook("ping", gh.ping_event())
    gh.send_webhook("push", {"ref": "refs/heads/main", "repository": {"full_name": REPO}})
    assert all(d.status_code == 0 for d in lost)
    # Back up; the repair run finds exactly the lost pull_request deliveries.
    gh.configure_hook(stack.webhook_url, WEBHOOK_SECRET)
    result, state = repair_deliveries(stack.service.engine, app, {})
    assert sorted(result.redelivered) == sorted(d.guid for d in lost)
    gh.hook.settle()
    for number in burst:
        wait_for(lambda n=number: _reports(stack, n), what=f"report on #{number}")
    wait_for(stack.idle, what="idle queue")
    assert all(len(_reports(stack, n)) == 1 for n in [first, *burst])
    redelivered = [d for d in gh.hook_deliveries() if d.redelivery]
    assert len(redelivered) == 4 and all(d.status_code == 202 for d in redelivered)
    # The next run: the new attempts succeeded; nothing more is sent.
    again, state = repair_deliveries(stack.service.engine, app, state)
    assert again.redelivered == [] and not again.not_modified
    # And a quiet App costs one conditional request answered 304.
    gh.reset_calls()
    quiet, _ = repair_deliveries(stack.service.engine, app, state)
    assert quiet.not_modified and quiet.pages == 1
    assert [(c.method, c.path, c.status) for c in gh.calls] == [
        ("GET", "/app/hook/deliveries", 304)
    ]


def test_a_redelivery_that_keeps_failing_is_retried_a_bounded_number_of_times(stack):
    gh = stack.github
    gh.configure_hook(DOWN, WEBHOOK_SECRET)
    number = _open(stack, "doomed")
    gh.send_webhook("pull_request", gh.pull_request_event(REPO, number, "opened"))
    state: dict = {}
    sent = 0
    for _ in range(6):
        result, state = repair_deliveries(stack.service.engine, stack.service.app, state)
        gh.hook.settle()
        sent += len(result.redelivered)
    assert sent == 3
    assert len(gh.hook_deliveries()) == 4  # the original and three redeliveries


def test_pages_are_walked_by_cursor_and_bounded(stack, monkeypatch):
    import bot.repair.redeliver as repair
    from bot.testing.app_hooks import HookDelivery

    hook = stack.github.hook
    for index in range(250):
        hook.deliveries.append(HookDelivery(hook._ids(), f"g{index}", "ping", None, {}, 0))
    monkeypatch.setattr(repair, "MAX_PAGES", 2)
    result, _ = repair_deliveries(stack.service.engine, stack.service.app, {})
    assert result.pages == 2 and result.attempts == 200 and result.redelivered == []
    cursors = [
        c.query.get("cursor") for c in stack.github.calls if c.path == "/app/hook/deliveries"
    ]
    assert cursors[0] is None and cursors[1] is not None


def test_an_open_pr_reported_for_an_older_head_is_queued(stack):
    gh = stack.github
    gh.configure_hook(stack.webhook_url, WEBHOOK_SECRET)
    number = _open(stack, "moving")
    gh.send_webhook("pull_request", gh.pull_request_event(REPO, number, "opened"))
    wait_for(lambda: _reports(stack, number), what="first report")
    wait_for(stack.idle, what="idle queue")
    # A push whose delivery never came (older than GitHub keeps, or lost outright).
    new_head = gh.push(REPO, number, {"moving.py": "y = 2\n"})
    client = stack.service.app.installation(INSTALLATION_ID)
    reconcile(stack.service.engine, client, REPO)
    ctx = stack.service.worker().ctx
    queued = sweep_heads(stack.service.engine, ctx.enqueue_pipeline, None, spacing=SPACING).queued
    assert [(s.number, s.current_head) for s in queued] == [(number, new_head)]
    wait_for(
        lambda: f"prbot:head={new_head}" in _reports(stack, number)[0]["body"],
        what="report for the new head",
    )
    wait_for(stack.idle, what="idle queue")
    assert len(_reports(stack, number)) == 1
    # Now current: a second sweep queues nothing.
    again = sweep_heads(stack.service.engine, ctx.enqueue_pipeline, None, spacing=SPACING)
    assert again.queued == [] and again.gave_up == []


NOW = datetime(2026, 1, 10, tzinfo=UTC)


def _attempt(id_, guid, status, *, event="pull_request", action="opened", age=0, again=False):
    return HookAttempt(id_, guid, event, action, status, NOW - timedelta(hours=age), again)


def test_choice_of_redeliveries():
    attempts = [
        _attempt(9, "ok-later", 202),
        _attempt(8, "ok-later", 0),  # failed, then succeeded: nothing to do
        _attempt(7, "stored", 503),  # GitHub saw a failure but prbot has it
        _attempt(6, "lost", 0),
        _attempt(5, "closed-action", 0, action="assigned"),  # prbot drops it unstored
        _attempt(4, "too-old", 0, age=80),
        _attempt(3, "lost-earlier", 500),
    ]
    chosen = choose_redeliveries(attempts, {"stored"}, HANDLED_ACTIONS, now=NOW)
    assert [a.guid for a in chosen] == ["lost-earlier", "lost"]


def test_listing_pages_are_parsed_defensively():
    page = [
        {
            "id": 1,
            "guid": "g",
            "event": "ping",
            "status_code": 0,
            "delivered_at": "2026-01-01T00:00:00Z",
        },
        {"id": "2", "guid": "g", "event": "ping", "status_code": 0, "delivered_at": "x"},
        {"id": 3, "guid": None},
        "junk",
        {"id": 4, "guid": "h", "event": "ping", "status_code": 0, "delivered_at": "bad"},
    ]
    assert [a.id for a in parse_attempts(page)] == [1]
    assert parse_attempts({"not": "a list"}) == []
    link = '<https://api.github.com/app/hook/deliveries?per_page=100&cursor=v1_9>; rel="next"'
    assert next_page_url(link).endswith("cursor=v1_9")
    assert next_page_url('<https://x/y>; rel="prev"') is None and next_page_url(None) is None


def test_the_repair_job_reschedules_itself_before_it_works(stack, monkeypatch):
    """A run that fails (GitHub down) leaves the next one queued: the chain never ends."""
    from bot.repair.redeliver import JOB_KIND
    from bot.store.queue import Queue
    from bot.worker.handlers.repair import repair

    gh = stack.github
    gh.configure_hook(DOWN, WEBHOOK_SECRET)
    number = _open(stack, "later")
    gh.send_webhook("pull_request", gh.pull_request_event(REPO, number, "opened"))
    gh.configure_hook(stack.webhook_url, WEBHOOK_SECRET)
    ctx = stack.service.worker().ctx
    gh.inject("GET", "^/app/hook/deliveries$", status=401, times=1)
    with pytest.raises(Exception):  # noqa: B017, PT011 - PyGithub raises its own kinds
        repair(ctx, {"state": {}})
    queue = Queue(stack.service.engine)
    queued = [j for j in queue.jobs("queued") if j.kind == JOB_KIND]
    assert len(queued) == 1 and queued[0].payload == {"state": {}}
    gh.clear_injections()
    repair(ctx, queued[0].payload)
    gh.hook.settle()
    wait_for(lambda: _reports(stack, number), what="report after repair")
    (again,) = [j for j in queue.jobs("queued") if j.kind == JOB_KIND]
    assert again.payload["state"]["etag"]  # the next run asks conditionally


def test_a_refused_redelivery_is_counted_and_the_rest_go_on(stack, monkeypatch):
    import bot.repair.redeliver as repair

    gh = stack.github
    gh.configure_hook(DOWN, WEBHOOK_SECRET)
    numbers = [_open(stack, f"r{i}") for i in range(3)]
    for number in numbers:
        gh.send_webhook("pull_request", gh.pull_request_event(REPO, number, "opened"))
    gh.configure_hook(stack.webhook_url, WEBHOOK_SECRET)
    gh.inject("POST", r"^/app/hook/deliveries/\d+/attempts$", status=422, times=1)
    monkeypatch.setattr(repair, "MAX_REDELIVERIES_PER_RUN", 2)
    result, state = repair_deliveries(stack.service.engine, stack.service.app, {"since": "x"})
    # One refused by GitHub, one sent; the third waits for the next run, walked again.
    assert result.redeliver_failures == 1 and len(result.redelivered) == 1
    assert state["etag"] is None and state["since"] == "x"
    gh.hook.settle()
    monkeypatch.setattr(repair, "MAX_REDELIVERIES_PER_RUN", 500)
    wait_for(lambda: stored_count(stack) == 1, what="the one redelivered")
    again, _ = repair_deliveries(stack.service.engine, stack.service.app, state)
    assert len(again.redelivered) == 2


def stored_count(stack):
    from bot.store.deliveries import count_deliveries

    return count_deliveries(stack.service.engine)


def test_a_stale_pr_without_a_stored_event_is_skipped(stack):
    import sqlalchemy as sa

    from bot.store import state as store_state
    from bot.store.schema import open_prs

    engine = stack.service.engine
    store_state.save_report(engine, "other/repo", 5, "old", "pass", {}, "")
    with engine.begin() as connection:
        connection.execute(
            sa.insert(open_prs).values(
                repo="other/repo",
                number=5,
                state="open",
                title="t",
                body="",
                author="a",
                updated_at="2026-01-01T00:00:00Z",
                head_sha="new",
                files_known=False,
                patches_known=False,
                features={},
                seq=1,
            )
        )
    assert sweep_heads(engine, lambda *a, **k: 0, None, spacing=SPACING).queued == []
