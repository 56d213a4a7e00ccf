"""GitHub's Re-run buttons end to end: signed ``check_run``/``check_suite`` deliveries in, the
pipeline run again for a head that is still the PR's, nothing for one a push has replaced."""

from __future__ import annotations

import itertools

import pytest

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.store.queue import Queue

_names = itertools.count()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with LocalStack(tmp_path_factory.mktemp("stack")) as running:
        yield running


def _reported_pr(stack, *, fork_owner=None):
    """A new repository with one PR whose report is published; (repo, number, head, run id)."""
    repo = f"acme/rerun-{next(_names)}"
    gh = stack.github
    gh.create_repo(repo, installation_id=INSTALLATION_ID, files={"core.py": "x = 1\n"})
    head = gh.commit(repo, "feature", {"core.py": "x = 2\n"}, "change")
    number = gh.open_pull_request(
        repo, head_branch="feature", title="Change", author="alice", fork_owner=fork_owner
    )["number"]
    stack.deliver("pull_request", gh.pull_request_event(repo, number, "opened"))
    run = wait_for(lambda: _completed_run(stack, repo, head), what="completed check run")
    wait_for(stack.idle, what="idle queue")
    return repo, number, head, run["id"]


def _completed_run(stack, repo, head):
    runs = [r for r in stack.github.check_runs(repo, head) if r["status"] == "completed"]
    return runs[0] if runs else None


def _pipeline_jobs(stack, repo):
    queue = Queue(stack.service.engine)
    jobs = [
        job
        for job in queue.jobs(limit=1000)
        if job.kind == "pipeline" and job.payload.get("repo") == repo
    ]
    return sorted(jobs, key=lambda job: job.id)  # oldest first


def test_rerun_button_runs_the_pipeline_again_on_the_same_check_run(stack):
    repo, number, head, run_id = _reported_pr(stack)
    before = len(_pipeline_jobs(stack, repo))
    payload = stack.github.check_run_event(repo, run_id, "rerequested", sender="alice")
    assert stack.deliver("check_run", payload).status_code == 202
    wait_for(lambda: len(_pipeline_jobs(stack, repo)) > before, what="pipeline job")
    wait_for(stack.idle, what="idle queue")
    history = stack.github.check_run_history(repo, run_id)
    # Back in progress while the checks ran again, then completed: one run per head still.
    assert history == ["in_progress", "completed", "in_progress", "completed"]
    assert len(stack.github.check_runs(repo, head)) == 1
    job = _pipeline_jobs(stack, repo)[-1]
    assert job.payload["reason"] == "check_run.rerequested" and job.payload["number"] == number


def test_rerun_all_checks_on_the_suite(stack):
    repo, _, _, run_id = _reported_pr(stack)
    before = len(_pipeline_jobs(stack, repo))
    payload = stack.github.check_suite_event(repo, run_id, "rerequested", sender="alice")
    assert stack.deliver("check_suite", payload).status_code == 202
    wait_for(lambda: len(_pipeline_jobs(stack, repo)) > before, what="pipeline job")
    wait_for(stack.idle, what="idle queue")
    assert stack.github.check_run_history(repo, run_id)[-2:] == ["in_progress", "completed"]
    assert _pipeline_jobs(stack, repo)[-1].payload["reason"] == "check_suite.rerequested"


def test_rerun_of_a_fork_pr_finds_it_by_head(stack):
    # GitHub leaves PRs from forks out of check_run.pull_requests.
    repo, number, _, run_id = _reported_pr(stack, fork_owner="alice")
    payload = stack.github.check_run_event(repo, run_id, "rerequested", sender="alice")
    assert payload["check_run"]["pull_requests"] == []
    before = len(_pipeline_jobs(stack, repo))
    stack.deliver("check_run", payload)
    wait_for(lambda: len(_pipeline_jobs(stack, repo)) > before, what="pipeline job")
    assert _pipeline_jobs(stack, repo)[-1].payload["number"] == number
    wait_for(stack.idle, what="idle queue")


def test_refused_at_intake_other_apps_runs_and_replaced_heads_do_nothing(stack):
    repo, number, _, run_id = _reported_pr(stack)
    before = len(_pipeline_jobs(stack, repo))
    payload = stack.github.check_run_event(repo, run_id, "rerequested", sender="alice")
    bad_head = {**payload, "check_run": {**payload["check_run"], "head_sha": "not-a-sha"}}
    response = stack.deliver("check_run", bad_head)
    assert response.status_code == 400 and "check_run.head_sha" in response.text
    suite = stack.github.check_suite_event(repo, run_id, "rerequested", sender="alice")
    suite["check_suite"]["pull_requests"] = [{"number": "1"}]
    assert stack.deliver("check_suite", suite).status_code == 400
    other_app = {**payload, "check_run": {**payload["check_run"], "app": {"id": 999}}}
    stack.deliver("check_run", other_app)
    wait_for(stack.idle, what="idle queue")
    assert len(_pipeline_jobs(stack, repo)) == before
    # A re-run of a head a push has replaced: nothing runs, the old run stays as it was.
    stack.github.push(repo, number, {"core.py": "x = 3\n"}, "newer")
    assert stack.deliver("check_run", payload).status_code == 202
    wait_for(stack.idle, what="idle queue")
    assert len(_pipeline_jobs(stack, repo)) == before
    assert stack.github.check_run_history(repo, run_id) == ["in_progress", "completed"]
