"""RepoMirror with real git over HTTP from the local GitHub test server."""

from __future__ import annotations

import pytest

from bot.local.git import GitError, run_git
from bot.local.mirror import RepoMirror, StaleHead

REPO = "acme/widgets"
INSTALLATION = 7
UPLOAD_PACK = f"/{REPO}.git/git-upload-pack"


@pytest.fixture
def pull(github_server):
    """An open PR on the test server: (number, base sha, head sha)."""
    github_server.add_installation(INSTALLATION, "acme")
    github_server.create_repo(REPO, installation_id=INSTALLATION, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"}, "change a")
    opened = github_server.open_pull_request(REPO, head_branch="feature", title="Change a")
    return opened["number"], opened["base"]["sha"], opened["head"]["sha"]


def _mirror(tmp_path, github_server) -> RepoMirror:
    return RepoMirror(tmp_path / "data", REPO, github_server.git_url(REPO))


def test_fetch_pull_brings_base_and_head_under_prbot_refs(tmp_path, github_server, pull):
    number, base, head = pull
    token = github_server.create_installation_token(INSTALLATION)
    mirror = _mirror(tmp_path, github_server)
    assert mirror.path == tmp_path / "data" / "mirrors" / "acme" / "widgets.git"
    mirror.fetch_pull(token, number, "main", base, head)
    assert mirror.has_commit(base) and mirror.has_commit(head)
    refs = run_git(mirror.path, ["for-each-ref", "--format=%(refname) %(objectname)"]).decode()
    assert f"refs/prbot/pull/{number}/head {head}" in refs.splitlines()
    assert f"refs/prbot/heads/main {base}" in refs.splitlines()
    assert run_git(mirror.path, ["show", f"{head}:a.py"]).decode() == "x = 2\n"
    # The token went in through the environment, never into the mirror's config.
    assert token not in (mirror.path / "config").read_text()


def test_a_head_already_mirrored_costs_no_fetch(tmp_path, github_server, pull):
    number, base, head = pull
    token = github_server.create_installation_token(INSTALLATION)
    mirror = _mirror(tmp_path, github_server)
    mirror.fetch_pull(token, number, "main", base, head)
    github_server.reset_calls()
    mirror.fetch_pull(token, number, "main", base, head)
    assert github_server.count_calls("POST", UPLOAD_PACK) == 0
    new_head = github_server.push(REPO, number, {"b.py": "y = 1\n"})
    mirror.fetch_pull(token, number, "main", base, new_head)
    assert mirror.has_commit(new_head)
    assert github_server.count_calls("POST", UPLOAD_PACK) >= 1


def test_a_head_nobody_can_fetch_is_a_stale_head(tmp_path, github_server, pull):
    number, base, _head = pull
    token = github_server.create_installation_token(INSTALLATION)
    gone = "0123456789abcdef" * 2 + "01234567"
    with pytest.raises(StaleHead, match=f"{REPO}#{number}: {gone} not fetchable"):
        _mirror(tmp_path, github_server).fetch_pull(token, number, "main", base, gone)


def test_without_a_token_the_server_refuses_the_fetch(tmp_path, github_server, pull):
    number, base, head = pull
    mirror = _mirror(tmp_path, github_server)
    with pytest.raises(GitError):
        mirror.fetch_pull(None, number, "main", base, head)
    assert not mirror.has_commit(head)


def test_the_remote_follows_the_latest_clone_url(tmp_path, github_server, pull):
    number, base, head = pull
    token = github_server.create_installation_token(INSTALLATION)
    old = RepoMirror(tmp_path / "data", REPO, f"{github_server.url}/acme/old-name.git")
    with pytest.raises(GitError):
        old.fetch_pull(token, number, "main", base, head)
    # Renamed on GitHub: the next payload's clone URL replaces the stored one.
    mirror = _mirror(tmp_path, github_server)
    mirror.fetch_pull(token, number, "main", base, head)
    url = run_git(mirror.path, ["config", "remote.origin.url"]).decode().strip()
    assert url == github_server.git_url(REPO) and mirror.has_commit(head)


def test_has_commit_is_false_for_what_is_not_a_commit(tmp_path, github_server, pull):
    number, base, head = pull
    mirror = _mirror(tmp_path, github_server)
    mirror.fetch_pull(
        github_server.create_installation_token(INSTALLATION), number, "main", base, head
    )
    tree = run_git(mirror.path, ["rev-parse", f"{head}^{{tree}}"]).decode().strip()
    assert not mirror.has_commit(tree)
    assert not mirror.has_commit("not-a-sha")
