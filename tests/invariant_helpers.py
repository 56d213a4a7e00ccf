"""Shared set-up for the invariant tests: a PR on a running LocalStack, and what prbot wrote."""

from __future__ import annotations

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack
from bot.report.render import MARKER
from bot.store.queue import Job, Queue
from bot.testing import FakeGitHub

REPO = "acme/widgets"
FILES = {"README.md": "# widgets\n", "widgets/core.py": "x = 1\n"}


def create_repo(stack: LocalStack) -> None:
    stack.github.create_repo(REPO, installation_id=INSTALLATION_ID, files=dict(FILES))


def open_pr(stack: LocalStack, author: str = "alice") -> int:
    gh = stack.github
    gh.commit(REPO, "feature", {"widgets/core.py": "x = 2\n"}, "speed up")
    pull = gh.open_pull_request(
        REPO, head_branch="feature", title="Speed up core", body="Makes it fast.", author=author
    )
    return pull["number"]


def head_of(gh: FakeGitHub, number: int) -> str:
    return gh.repos[REPO].pulls[number].head_sha


def report_comments(gh: FakeGitHub, number: int) -> list[dict]:
    """prbot's sticky comments on the PR (marker and bot author)."""
    return [
        c for c in gh.comments(REPO, number) if MARKER in c["body"] and c["user"]["type"] == "Bot"
    ]


def bot_replies(gh: FakeGitHub, number: int) -> list[dict]:
    """prbot's other comments (e.g. the refusal of an unauthorized command)."""
    return [
        c
        for c in gh.comments(REPO, number)
        if MARKER not in c["body"] and c["user"]["type"] == "Bot"
    ]


def comment_for_head(gh: FakeGitHub, number: int, sha: str) -> list[dict] | None:
    comments = report_comments(gh, number)
    return comments if comments and f"prbot:head={sha}" in comments[0]["body"] else None


def jobs_of_kind(stack: LocalStack, kind: str) -> list[Job]:
    return [job for job in Queue(stack.service.engine).jobs(limit=1000) if job.kind == kind]


def force_push_away(gh: FakeGitHub, number: int, *, forget: bool) -> str:
    """Rewrite the PR's branch to a commit that does not contain its head, like `push -f`.

    With ``forget`` the server also drops the old head's objects (``git gc --prune=now``), so
    nobody can fetch it any more. Returns the new head.
    """
    with gh.lock:
        repo = gh.repos[REPO]
        pr = repo.pulls[number]
        old = pr.head_sha
        new = repo.git.commit_files(
            pr.head_branch,
            {"widgets/core.py": "x = 3  # rewritten\n"},
            message="rewrite",
            author=pr.author,
            parent=repo.branch_sha(repo.default_branch),
        )
        repo.git.set_ref(f"refs/pull/{number}/head", new)
        pr.head_history.append(old)
        pr.head_sha = new
        if forget:
            repo.git.git("gc", "-q", "--prune=now")
    return new
