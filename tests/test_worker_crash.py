"""Kill a worker process in the middle of a job; another finishes it, once, one comment."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.report.render import MARKER
from bot.store.queue import Queue

REPO = "acme/widgets"

pytestmark = pytest.mark.slow


def _start_worker(stack):
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "worker"],
        env=stack.worker_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(
    "method, path, after_effect",
    [
        # Killed while fetching the installation token: nothing was published yet.
        ("POST", r"/app/installations/\d+/access_tokens", False),
        # Killed after GitHub created the comment but before the worker learned its id.
        ("POST", r"/repos/acme/widgets/issues/\d+/comments", True),
    ],
    ids=["before-any-effect", "after-comment-created"],
)
def test_killed_worker_job_completes_once(tmp_path, method, path, after_effect):
    with LocalStack(tmp_path / "stack", with_worker=False, lease_seconds=2) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        gh.commit(REPO, "feature", {"a.py": "x = 2\n"})
        number = gh.open_pull_request(REPO, head_branch="feature", title="Change a")["number"]
        gh.inject(method, path, delay=60, after_effect=after_effect)
        assert (
            stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened")).status_code
            == 202
        )

        first = _start_worker(stack)
        try:
            # An injection is used up when its request arrives, before the delay.
            wait_for(lambda: not gh.pending_injections(), what="the stalled request to arrive")
            if after_effect:
                wait_for(lambda: gh.comments(REPO, number), what="the comment to exist")
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
            first_log = first.stderr.read().decode()

        second = _start_worker(stack)
        try:
            queue = Queue(stack.service.engine)
            wait_for(
                lambda: stack.idle() and queue.depth()["done"] >= 2,
                timeout=90,
                what="the job to finish",
            )
        finally:
            second.terminate()
            second.wait(timeout=10)
            second_log = second.stderr.read().decode()

        reports = [
            c
            for c in gh.comments(REPO, number)
            if MARKER in c["body"] and c["user"]["type"] == "Bot"
        ]
        assert len(reports) == 1, f"first worker:\n{first_log}\nsecond worker:\n{second_log}"
        head = gh.pull_request_event(REPO, number, "opened")["pull_request"]["head"]["sha"]
        assert f"prbot:head={head}" in reports[0]["body"]
        assert len(gh.check_runs(REPO, head)) == 1
        assert queue.depth()["dead"] == 0


def test_slow_github_answer_after_comment_created_is_not_posted_twice(tmp_path):
    # GitHub created the comment but answered after the client gave up: the job fails,
    # is retried, finds the comment by marker and author, and edits it.
    with LocalStack(tmp_path / "stack", github_timeout=2) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        gh.commit(REPO, "feature", {"a.py": "x = 2\n"})
        number = gh.open_pull_request(REPO, head_branch="feature", title="Change a")["number"]
        gh.inject("POST", r"/repos/acme/widgets/issues/\d+/comments", delay=5, after_effect=True)
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        head = gh.pull_request_event(REPO, number, "opened")["pull_request"]["head"]["sha"]
        wait_for(
            lambda: [r for r in gh.check_runs(REPO, head) if r["status"] == "completed"],
            timeout=90,
            what="the completed check run",
        )
        reports = [
            c
            for c in gh.comments(REPO, number)
            if MARKER in c["body"] and c["user"]["type"] == "Bot"
        ]
        assert len(reports) == 1
        assert gh.count_calls("POST", f"/repos/{REPO}/issues/{number}/comments") == 1
