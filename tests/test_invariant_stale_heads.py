"""A report for an older head never overwrites a newer one, in every order the events can take.

Two guards hold the promise: the pipeline's (before any work, for a job whose head is already
superseded) and the publisher's (under the per-PR lock, for a job overtaken while it ran). The
race between an older and a newer head is ordered with the test server's hold and release.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from invariant_helpers import (
    REPO,
    comment_for_head,
    create_repo,
    force_push_away,
    head_of,
    jobs_of_kind,
    open_pr,
    report_comments,
)

from bot.cli.demo_stack import LocalStack, wait_for
from bot.store import state


@pytest.fixture
def stack(tmp_path):
    with LocalStack(tmp_path / "stack") as running:
        create_repo(running)
        yield running


def _earlier(timestamp: str, seconds: int = 60) -> str:
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00")) - timedelta(seconds=seconds)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_report_for_an_older_head_never_overwrites_a_newer_one(stack):
    # The older head's job passes the pipeline's guard, then stalls in its git fetch while the
    # newer head is observed; only the publisher's guard can stop it when it finishes.
    gh = stack.github
    assert stack.settings.worker_threads >= 2  # one job stalls while another runs
    number = open_pr(stack)
    older = head_of(gh, number)
    with gh.hold("*", rf"^/{REPO}\.git/") as fetch:
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        fetch.wait_until_held()  # the older head's job is inside its fetch
        newer = gh.push(REPO, number, {"widgets/extra.py": "y = 1\n"}, "more")
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "synchronize"))
        wait_for(
            lambda: state.current_head(stack.service.engine, REPO, number) == newer,
            what="the newer head to be observed",
        )
    wait_for(lambda: comment_for_head(gh, number, newer), what="the newer head's report")
    wait_for(stack.idle, what="idle queue")
    assert len(report_comments(gh, number)) == 1
    assert comment_for_head(gh, number, newer)
    assert gh.check_runs(REPO, older) == []  # the older report was never published
    assert len(gh.check_runs(REPO, newer)) == 1


def test_an_older_head_delivered_late_is_never_reported(stack):
    # GitHub redelivers `opened` after `synchronize` was handled: the older head queues no
    # run (bot/worker/handlers/pull_request.py), so neither GitHub nor the stored reports move back.
    gh = stack.github
    number = open_pr(stack)
    older = head_of(gh, number)
    late_opened = gh.pull_request_event(REPO, number, "opened")
    newer = gh.push(REPO, number, {"widgets/extra.py": "y = 1\n"}, "more")
    synchronize = gh.pull_request_event(REPO, number, "synchronize")
    late_opened["pull_request"]["updated_at"] = _earlier(synchronize["pull_request"]["updated_at"])
    stack.deliver("pull_request", synchronize)
    wait_for(lambda: comment_for_head(gh, number, newer), what="the newer head's report")
    wait_for(stack.idle, what="idle queue")

    assert stack.deliver("pull_request", late_opened).status_code == 202
    wait_for(stack.idle, what="idle queue")
    assert len(jobs_of_kind(stack, "pipeline")) == 1  # the newer head's run only
    engine = stack.service.engine
    assert state.latest_report(engine, REPO, number)["head_sha"] == newer
    assert state.latest_report(engine, REPO, number, head_sha=older) is None
    assert comment_for_head(gh, number, newer) and len(report_comments(gh, number)) == 1
    assert gh.check_runs(REPO, older) == []


def test_a_head_force_pushed_away_and_gone_is_skipped_not_retried(stack):
    # The job's head was force-pushed away and the server no longer has it: StaleHead.
    # The job ends (done, no error) instead of failing towards a dead letter.
    gh = stack.github
    number = open_pr(stack)
    gone = head_of(gh, number)
    opened = gh.pull_request_event(REPO, number, "opened")
    force_push_away(gh, number, forget=True)
    stack.deliver("pull_request", opened)
    wait_for(lambda: jobs_of_kind(stack, "pipeline"), what="the pipeline job")
    wait_for(stack.idle, what="idle queue")
    [job] = jobs_of_kind(stack, "pipeline")
    assert (job.state, job.attempts, job.last_error) == ("done", 1, None)
    assert report_comments(gh, number) == [] and gh.check_runs(REPO) == []
    assert state.latest_report(stack.service.engine, REPO, number, head_sha=gone) is None


def test_a_head_no_longer_at_the_branch_tip_is_fetched_by_sha(stack):
    # `opened` arrives after a force-push, but GitHub still serves the old head: the mirror
    # fetches it by SHA and the report is for the head the event named.
    gh = stack.github
    number = open_pr(stack)
    old = head_of(gh, number)
    gh.repos[REPO].git.set_ref("refs/heads/kept", old)  # still reachable on the server
    opened = gh.pull_request_event(REPO, number, "opened")
    force_push_away(gh, number, forget=False)
    stack.deliver("pull_request", opened)
    wait_for(lambda: comment_for_head(gh, number, old), what="the report for the old head")
    wait_for(stack.idle, what="idle queue")
    assert len(gh.check_runs(REPO, old)) == 1
    [job] = jobs_of_kind(stack, "pipeline")
    assert (job.state, job.last_error) == ("done", None)
