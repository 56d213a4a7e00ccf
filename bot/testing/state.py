"""The test server's world: installations, repositories, pull requests, comments, check runs."""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.testing.bare_repo import BareRepo, DiffEntry


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_id(kind: str, number: int) -> str:
    """A legacy-format GraphQL node id, like GitHub's "MDQ6VXNlcjE=" for ("User", 1)."""
    return base64.b64encode(f"0{len(kind)}:{kind}{number}".encode()).decode()


@dataclass
class Installation:
    id: int
    account: str
    created_at: str = field(default_factory=now_iso)
    # What the owner accepted; None: everything the App asks for (APP_PERMISSIONS).
    permissions: dict[str, str] | None = None


@dataclass
class Token:
    value: str
    installation_id: int
    expires_at: datetime
    used: int = 0  # requests made with it, for the rate-limit headers


@dataclass
class PullRequest:
    number: int
    id: int
    title: str
    body: str | None
    author: str
    author_association: str
    head_branch: str
    base_branch: str
    head_sha: str
    draft: bool = False
    fork_owner: str | None = None  # set when the head branch comes from a fork
    maintainer_can_modify: bool = False  # a fork's PR lets the upstream push to its branch
    state: str = "open"
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    closed_at: str | None = None
    head_history: list[str] = field(default_factory=list)  # earlier heads, oldest first
    changes: dict[str, dict[str, str | None]] = field(default_factory=dict)  # last edit
    labels: list[str] = field(default_factory=list)
    reviews: list[dict] = field(default_factory=list)  # (user, state, commit_id), oldest first


@dataclass
class Comment:
    id: int
    number: int  # the issue / pull request it is on
    author: str
    is_bot: bool
    body: str
    author_association: str
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    previous_body: str | None = None


@dataclass
class Reaction:
    id: int
    comment_id: int
    user: str
    is_bot: bool
    content: str
    created_at: str = field(default_factory=now_iso)


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str = "queued"
    conclusion: str | None = None
    started_at: str | None = field(default_factory=now_iso)
    completed_at: str | None = None
    details_url: str | None = None
    external_id: str | None = None
    output: dict[str, str | None] = field(default_factory=dict)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, str]] = field(default_factory=list)  # requested-action buttons
    history: list[str] = field(default_factory=list)  # each status it was set to, in order
    app: dict[str, Any] | None = None  # the app that made it; None: the App under test


@dataclass
class FakeRepo:
    """One repository: its bare git storage and everything GitHub keeps next to it."""

    id: int
    owner: str
    name: str
    installation_id: int
    default_branch: str
    git: BareRepo
    created_at: str = field(default_factory=now_iso)
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    comments: dict[int, Comment] = field(default_factory=dict)
    reactions: list[Reaction] = field(default_factory=list)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    pushes: list[tuple[str, str, str]] = field(default_factory=list)  # (branch, old, new)
    statuses: list[dict[str, Any]] = field(default_factory=list)  # commit statuses, oldest first
    # Branch protection's required approving reviews (0: none, GraphQL's reviewDecision null).
    required_reviews: int = 0
    _diff_cache: dict[tuple[str, str], list[DiffEntry]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def next_number(self) -> int:
        return max(self.pulls, default=0) + 1

    def pull_diff(self, pr: PullRequest) -> list[DiffEntry]:
        """The PR's files (against the base branch tip's merge-base), cached per SHA pair."""
        base_sha = self.branch_sha(pr.base_branch) or pr.head_sha
        key = (base_sha, pr.head_sha)
        if key not in self._diff_cache:
            self._diff_cache[key] = self.git.diff(base_sha, pr.head_sha)
        return self._diff_cache[key]

    def branch_sha(self, branch: str) -> str | None:
        return self.git.resolve(f"refs/heads/{branch}")

    def association_of(self, login: str) -> str:
        """GitHub's author_association of a user with this repository."""
        if login == self.owner:
            return "OWNER"
        if self.permissions.get(login, "none") != "none":
            return "COLLABORATOR"
        if any(p.author == login for p in self.pulls.values()):
            return "CONTRIBUTOR"
        return "NONE"


class IdSource:
    """Monotonic ids, spaced like GitHub's so ids of different kinds rarely coincide."""

    def __init__(self, start: int) -> None:
        self._counter = itertools.count(start)

    def __call__(self) -> int:
        return next(self._counter)
