"""Reconcile against the local GitHub test server: ETag listing, batched GraphQL, call counts,
and the index written through bot/store/open_prs.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from duplicates_helpers import PATCH, REGISTRY, REPO
from github import Auth, Github

from bot.core.snapshot import ChangedFile
from bot.github.app import InstallationClient
from bot.repair.reconcile import ReconcileError, reconcile
from bot.store.open_prs import (
    DatabaseIndex,
    apply_pull_request_event,
    needs_reconcile,
    open_pr_count,
)
from bot.testing import FakeGitHub

INSTALLATION = 7
NO_PACING = {"seconds_between_requests": None, "seconds_between_writes": None, "retry": None}


@pytest.fixture
def github_server() -> Iterator[FakeGitHub]:
    with FakeGitHub(app_slug="prbot") as gh:
        gh.add_installation(INSTALLATION, "acme")
        gh.create_repo(REPO, installation_id=INSTALLATION, files={REGISTRY: "x\n" * 80})
        yield gh


def _client(server: FakeGitHub) -> InstallationClient:
    auth = Auth.AppAuth(server.app_id, server.private_key_pem).get_installation_auth(INSTALLATION)
    return InstallationClient(Github(auth=auth, base_url=server.url, **NO_PACING), auth)


def _open(server: FakeGitHub, number: int, title: str, content: str) -> None:
    server.commit(REPO, f"b{number}", {f"vllm/f{number}.py": content, REGISTRY: content})
    server.open_pull_request(
        REPO, head_branch=f"b{number}", title=title, number=number, author=f"u{number}"
    )


def test_reconcile_lists_with_etags_and_batches_graphql(engine, github_server) -> None:
    for n in range(1, 5):
        _open(github_server, n, f"Change number {n}", f"value = {n}\n")
    github = _client(github_server)
    github_server.reset_calls()

    assert needs_reconcile(engine, REPO)
    cold = reconcile(engine, github, REPO)
    assert not needs_reconcile(engine, REPO)
    assert cold.open_prs == 4 and cold.written == 4 and cold.graphql_calls == 1
    assert cold.listing_calls == 1 and cold.listing_not_modified == 0
    assert github_server.count_calls("GET", f"/repos/{REPO}/pulls") == 1
    assert open_pr_count(engine, REPO) == 4

    warm = reconcile(engine, github, REPO)
    assert warm.listing_not_modified == warm.listing_calls == 1
    assert warm.graphql_calls == 0 and warm.written == 0

    github_server.close_pull_request(REPO, 2)
    _open(github_server, 7, "Another change", "value = 7\n")
    after = reconcile(engine, github, REPO)
    assert after.closed == 1 and after.written == 1 and after.graphql_calls == 1
    assert open_pr_count(engine, REPO) == 4
    index = DatabaseIndex(engine, REPO).sync()
    assert sorted(index.docs) == [1, 3, 4, 7]
    assert REGISTRY in index.get(7).files

    # A warm synchronize is an event plus the worker's own diff: no GitHub call at all.
    github_server.reset_calls()
    event = github_server.pull_request_event(REPO, 7, "synchronize")
    event["pull_request"]["updated_at"] = "9999-01-01T00:00:00Z"
    apply_pull_request_event(engine, event, [ChangedFile(REGISTRY, patch=PATCH)])
    assert github_server.calls == []
    assert "TOKENSPEED_MLA" in DatabaseIndex(engine, REPO).sync().get(7).identifiers


def test_github_failures_leave_the_index_as_it_was(engine, github_server) -> None:
    _open(github_server, 1, "Change number 1", "value = 1\n")
    github = _client(github_server)
    github_server.inject("GET", rf"^/repos/{REPO}/pulls$", status=502)
    with pytest.raises(ReconcileError, match="listing page 1: HTTP 502"):
        reconcile(engine, github, REPO)
    github_server.inject("POST", r"graphql", status=500)
    with pytest.raises(ReconcileError, match="GraphQL: HTTP 500"):
        reconcile(engine, github, REPO)
    assert open_pr_count(engine, REPO) == 0 and needs_reconcile(engine, REPO)
    assert reconcile(engine, github, REPO).written == 1
