"""The repair's sweep of heads without a report (bot/repair/redeliver.py over
bot/repair/head_sweeps.py), end
to end: a PR whose only pipeline job was dead-lettered gets its one comment after a sweep; a
head that always fails is swept a bounded number of times, then gets one comment and a check
run that say the run failed; never a second comment.

The worker here is driven by hand (``run_once``) over a queue that dead-letters at the first
failure, so no test waits for a retry's backoff; the git fetch fails through the local GitHub
test server's injections.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack
from bot.repair.redeliver import sweep_heads
from bot.report.render import MARKER, head_marker
from bot.store.queue import Queue
from bot.store.sweeps import sweep_count
from bot.worker.handlers.repair import failure_publisher

MAX_SWEEPS = 3  # docs/configuration.md: "Each head is swept at most three times"
REPO = "acme/widgets"
GIT = rf"^/{REPO}\.git/"
SPACING = timedelta(minutes=10)
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


@pytest.fixture
def stack(tmp_path):
    with LocalStack(tmp_path / "stack", with_worker=False) as running:
        running.github.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x\n"})
        yield running


@pytest.fixture
def worker(stack):
    # One attempt per job: a failure is a dead letter at once, as after PRBOT_MAX_ATTEMPTS.
    return stack.service.worker(Queue(stack.service.engine, max_attempts=1))


def _drain(worker) -> None:
    while worker.run_once():
        pass


def _reports(stack, number):
    return [
        c
        for c in stack.github.comments(REPO, number)
        if MARKER in c["body"] and c["user"]["type"] == "Bot"
    ]


def _open(stack, branch: str) -> int:
    gh = stack.github
    gh.commit(REPO, branch, {f"{branch}.py": "y = 1\n"})
    number = gh.open_pull_request(REPO, head_branch=branch, title=f"Add {branch}")["number"]
    assert stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened")).is_success
    return number


def _pipeline_states(worker, number):
    key = f"pipeline:{REPO}#{number}"
    return [job.state for job in worker.queue.jobs(limit=1000) if job.dedupe_key == key]


def _sweep(stack, worker, now):
    ctx = worker.ctx
    return sweep_heads(
        stack.service.engine,
        ctx.enqueue_pipeline,
        failure_publisher(ctx),
        spacing=SPACING,
        now=now,
    )


def test_a_pr_whose_pipeline_job_died_gets_its_one_comment_after_a_sweep(stack, worker):
    gh = stack.github
    gh.inject("*", GIT, status=500, times=1)
    number = _open(stack, "unlucky")
    _drain(worker)
    assert _pipeline_states(worker, number) == ["dead"]
    assert _reports(stack, number) == []

    swept = _sweep(stack, worker, T0)
    assert [(t.number, t.reported_head) for t in swept.queued] == [(number, None)]
    _drain(worker)
    [comment] = _reports(stack, number)
    head = gh.repos[REPO].pulls[number].head_sha
    assert head_marker(head) in comment["body"] and "could not check" not in comment["body"]
    assert len(gh.check_runs(REPO, head)) == 1
    # Reported now: later sweeps leave it alone, however much later.
    again = _sweep(stack, worker, T0 + timedelta(days=1))
    assert again.queued == [] and again.gave_up == []
    assert sweep_count(stack.service.engine, REPO, number, head) == 1


def test_a_head_that_always_fails_stops_being_swept_after_the_cap(stack, worker):
    gh = stack.github
    gh.inject("*", GIT, status=500, times=1000)
    number = _open(stack, "doomed")
    head = gh.repos[REPO].pulls[number].head_sha
    _drain(worker)
    now = T0
    for sweep in range(MAX_SWEEPS):
        assert [t.number for t in _sweep(stack, worker, now).queued] == [number]
        _drain(worker)
        if sweep + 1 < MAX_SWEEPS:  # before the spacing has passed, the next sweep waits
            assert _sweep(stack, worker, now + SPACING * 2**sweep / 2).queued == []
        now += SPACING * 2**sweep
    assert sweep_count(stack.service.engine, REPO, number, head) == MAX_SWEEPS
    assert _pipeline_states(worker, number) == ["dead"] * (1 + MAX_SWEEPS)
    assert _reports(stack, number) == []

    gave_up = _sweep(stack, worker, now)
    assert gave_up.queued == [] and [t.number for t in gave_up.gave_up] == [number]
    [comment] = _reports(stack, number)
    assert head_marker(head) in comment["body"]
    assert "prbot could not check this head" in comment["body"]
    assert "GitError" in comment["body"]  # the exception's name, not its message
    [run] = gh.check_runs(REPO, head)
    assert (run["status"], run["conclusion"]) == ("completed", "action_required")
    # Given up: nothing more is queued or posted, however long the repair keeps running
    # (past the counts' retention too: the failure report is the head's report).
    for later in (now, now + timedelta(days=60)):
        quiet = _sweep(stack, worker, later)
        assert quiet.queued == [] and quiet.gave_up == []
    assert sweep_count(stack.service.engine, REPO, number, head) == 0  # forgotten
    assert len(_reports(stack, number)) == 1


def test_no_failure_is_published_for_a_head_github_has_moved_on_from(stack, worker):
    # The index holds the head of the last event; GitHub has a newer one whose event never
    # came. The given-up head is not GitHub's, so nothing is posted for it.
    gh = stack.github
    gh.inject("*", GIT, status=500, times=1000)
    number = _open(stack, "moved")
    indexed = gh.repos[REPO].pulls[number].head_sha
    _drain(worker)  # the event, and the first listing of the repository's PRs
    gh.push(REPO, number, {"moved.py": "y = 3\n"})  # no event delivered
    now = T0
    for sweep in range(MAX_SWEEPS):
        _sweep(stack, worker, now)
        _drain(worker)
        now += SPACING * 2**sweep
    # As in the fault run: two pushes within one second of updated_at, their events handled
    # out of order, leave the older head as the PR's newest observed one.
    from bot.store import state

    later = datetime.now(UTC) + timedelta(days=1)
    assert state.observe_head(stack.service.engine, REPO, number, indexed, later)
    gave_up = _sweep(stack, worker, now)
    assert [(t.number, t.current_head) for t in gave_up.gave_up] == [(number, indexed)]
    assert _reports(stack, number) == [] and gh.check_runs(REPO, indexed) == []

    assert state.latest_report(stack.service.engine, REPO, number) is None
    assert _sweep(stack, worker, now + timedelta(days=1)).gave_up == []


def test_a_push_after_giving_up_is_reported_in_the_same_comment(stack, worker):
    gh = stack.github
    gh.inject("*", GIT, status=500, times=1000)
    number = _open(stack, "revived")
    _drain(worker)
    now = T0
    for sweep in range(MAX_SWEEPS + 1):
        _sweep(stack, worker, now)
        _drain(worker)
        now += SPACING * 2**sweep
    [failed] = _reports(stack, number)
    assert "could not check" in failed["body"]
    gh.clear_injections()
    new_head = gh.push(REPO, number, {"revived.py": "y = 2\n"})
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "synchronize"))
    _drain(worker)
    [comment] = _reports(stack, number)
    assert comment["id"] == failed["id"]
    assert head_marker(new_head) in comment["body"] and "could not check" not in comment["body"]
    assert _sweep(stack, worker, now + timedelta(days=1)).queued == []


def test_a_dry_run_stores_the_failure_report_without_publishing(tmp_path):
    with LocalStack(tmp_path / "dry", with_worker=False, dry_run=True) as stack:
        stack.github.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x\n"})
        worker = stack.service.worker(Queue(stack.service.engine, max_attempts=1))
        stack.github.inject("*", GIT, status=500, times=1000)
        number = _open(stack, "dry")
        _drain(worker)
        now = T0
        for sweep in range(MAX_SWEEPS + 1):
            _sweep(stack, worker, now)
            _drain(worker)
            now += SPACING * 2**sweep
        from bot.store import state

        stored = state.latest_report(stack.service.engine, REPO, number)
        assert stored is not None and stored["status"] == "error"
        assert "could not check" in stored["markdown"]
        assert _reports(stack, number) == []
