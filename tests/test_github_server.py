"""The local GitHub test server, exercised the way prbot uses GitHub: PyGithub and git over HTTP."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from github import (
    Auth,
    BadCredentialsException,
    Github,
    GithubException,
    GithubIntegration,
    RateLimitExceededException,
    UnknownObjectException,
)

from bot.local.git import auth_env
from bot.testing import FakeGitHub
from bot.testing.auth import AuthError, generate_private_key_pem, verify_app_jwt
from bot.testing.bare_repo import BareRepo
from bot.testing.rest_core import ApiRequest, paginate

INSTALLATION = 7
OTHER_INSTALLATION = 8
_names = itertools.count(1)
# `get_repo(name, lazy=True)` is what prbot's client does: no request until one is needed.
pytestmark = pytest.mark.filterwarnings("ignore:Argument lazy is deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitHub]:
    with FakeGitHub(app_slug="prbot") as gh:
        gh.add_installation(INSTALLATION, "acme")
        gh.add_installation(OTHER_INSTALLATION, "other")
        yield gh


# PyGithub spaces requests out (0.25 s, writes 1 s) unless told otherwise; tests need no pacing.
NO_PACING = {"seconds_between_requests": None, "seconds_between_writes": None, "retry": None}


def client(server: FakeGitHub, installation_id: int = INSTALLATION) -> Github:
    app = Auth.AppAuth(server.app_id, server.private_key_pem)
    auth = app.get_installation_auth(installation_id)
    return Github(auth=auth, base_url=server.url, **NO_PACING)


@pytest.fixture(scope="module")
def github(server: FakeGitHub) -> Github:
    return client(server)


@pytest.fixture
def repo_name(server: FakeGitHub) -> str:
    """A fresh repository per test, so tests never see each other's comments or runs."""
    name = f"acme/widgets{next(_names)}"
    server.create_repo(
        name,
        installation_id=INSTALLATION,
        files={"src/model.py": "def forward(x):\n    return x\n", "README.md": "# widgets\n"},
    )
    return name


def open_pr(server: FakeGitHub, repo_name: str, **kwargs: Any) -> dict:
    branch = kwargs.pop("branch", "feature")
    server.commit(repo_name, branch, {"src/model.py": "def forward(x):\n    return 2 * x\n"})
    kwargs.setdefault("title", "Double the output")
    return server.open_pull_request(repo_name, head_branch=branch, **kwargs)


def urls_in(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every (key, value) whose key names a URL, anywhere in a JSON document."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from urls_in(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from urls_in(item, key)
    elif isinstance(value, str) and (key in ("url", "href") or key.endswith("_url")):
        yield key, value


def assert_own_urls(server: FakeGitHub, document: Any) -> None:
    found = [(k, v) for k, v in urls_in(document) if k not in ("git_url", "ssh_url")]
    assert found
    strays = [(k, v) for k, v in found if not v.startswith(server.url + "/")]
    assert strays == []


def run_git(*args: str, cwd: Path | None = None, token: str | None = None) -> str:
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        **auth_env(token),
    }
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return proc.stdout.strip()


# --- repositories and pull requests
def test_pull_request_read_through_pygithub(server, github, repo_name):
    opened = open_pr(server, repo_name, body=None, author="alice")
    pull = github.get_repo(repo_name, lazy=True).get_pull(opened["number"])
    assert pull.title == "Double the output"
    assert pull.body is None
    assert pull.user.login == "alice"
    assert pull.head.sha == opened["head"]["sha"]
    assert pull.base.ref == "main"
    assert pull.state == "open"
    assert (pull.additions, pull.deletions, pull.changed_files) == (1, 1, 1)
    raw = pull.raw_data
    for key in ("closed_at", "merged_at", "milestone", "assignee", "auto_merge", "merged_by"):
        assert raw[key] is None
    assert raw["author_association"] == "CONTRIBUTOR"
    assert raw["node_id"]
    assert_own_urls(server, raw)


def test_pull_files_come_from_the_real_diff(server, github, repo_name):
    server.commit(
        repo_name,
        "refactor",
        {
            "src/model.py": "def forward(x):\n    return x + 1\n",
            "README.md": None,
            "docs/guide.md": "# Guide\n\nRead me.\n",
        },
    )
    number = server.open_pull_request(repo_name, head_branch="refactor", title="Refactor")["number"]
    pull = github.get_repo(repo_name, lazy=True).get_pull(number)
    files = {f.filename: f for f in pull.get_files()}
    assert {name: f.status for name, f in files.items()} == {
        "src/model.py": "modified",
        "README.md": "removed",
        "docs/guide.md": "added",
    }
    model = files["src/model.py"]
    assert (model.additions, model.deletions, model.changes) == (1, 1, 2)
    assert model.patch.splitlines() == [
        "@@ -1,2 +1,2 @@",
        " def forward(x):",
        "-    return x",
        "+    return x + 1",
    ]
    assert files["docs/guide.md"].additions == 3


def test_renamed_file_is_reported_as_renamed(server, github, repo_name):
    body = "".join(f"line {i}\n" for i in range(20))
    server.commit(repo_name, "main", {"src/big.py": body})
    server.commit(repo_name, "move", {"src/big.py": None, "src/moved.py": body})
    number = server.open_pull_request(repo_name, head_branch="move", title="Move")["number"]
    (entry,) = github.get_repo(repo_name, lazy=True).get_pull(number).get_files()
    assert (entry.filename, entry.status, entry.previous_filename) == (
        "src/moved.py",
        "renamed",
        "src/big.py",
    )


def test_list_pulls_filters_by_state(server, github, repo_name):
    first = open_pr(server, repo_name, branch="one")["number"]
    second = open_pr(server, repo_name, branch="two")["number"]
    server.close_pull_request(repo_name, first)
    repo = github.get_repo(repo_name, lazy=True)
    assert [p.number for p in repo.get_pulls(state="open")] == [second]
    assert sorted(p.number for p in repo.get_pulls(state="all")) == [first, second]
    closed = repo.get_pull(first)
    assert closed.state == "closed" and closed.closed_at is not None


def test_conditional_listing_answers_304_while_unchanged(server, github, repo_name):
    open_pr(server, repo_name)
    requester = github.get_repo(repo_name, lazy=True)._requester
    path = f"/repos/{repo_name}/pulls"
    status, headers, body = requester.requestJson("GET", path, parameters={"state": "open"})
    assert status == 200 and len(json.loads(body)) == 1
    etag = headers["etag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    status, _, body = requester.requestJson(
        "GET", path, parameters={"state": "open"}, headers={"If-None-Match": etag}
    )
    assert (status, body) == (304, "")
    open_pr(server, repo_name, branch="another")
    status, headers, _ = requester.requestJson(
        "GET", path, parameters={"state": "open"}, headers={"If-None-Match": etag}
    )
    assert status == 200 and headers["etag"] != etag


# --- comments and reactions
def test_comment_pagination_follows_link_headers(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    issue = github.get_repo(repo_name, lazy=True).get_issue(number)
    for i in range(35):
        issue.create_comment(f"comment {i}")
    server.reset_calls()
    listed = list(issue.get_comments())
    assert [c.body for c in listed] == [f"comment {i}" for i in range(35)]
    pages = [c for c in server.calls if c.path == f"/repos/{repo_name}/issues/{number}/comments"]
    assert [c.query.get("page", "1") for c in pages] == ["1", "2"]
    assert all(c.user.login == server.bot_login and c.user.type == "Bot" for c in listed)
    for comment in listed[:3] + listed[-3:]:
        assert_own_urls(server, comment.raw_data)


def test_per_page_is_capped_at_100(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    for i in range(3):
        server.add_user_comment(repo_name, number, "bob", f"hi {i}")
    requester = github.get_repo(repo_name, lazy=True)._requester
    path = f"/repos/{repo_name}/issues/{number}/comments"
    _, headers, body = requester.requestJson("GET", path, parameters={"per_page": 2})
    assert len(json.loads(body)) == 2
    assert 'rel="next"' in headers["link"] and 'rel="last"' in headers["link"]
    assert server.url in headers["link"]
    _, headers, body = requester.requestJson("GET", path, parameters={"per_page": 500})
    assert len(json.loads(body)) == 3 and "link" not in headers


def test_comment_edit_and_delete(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    repo = github.get_repo(repo_name, lazy=True)
    created = repo.get_issue(number).create_comment("first draft")
    fetched = repo.get_issue(number).get_comment(created.id)
    fetched.edit("final")
    assert [c["body"] for c in server.comments(repo_name, number)] == ["final"]
    fetched.delete()
    assert server.comments(repo_name, number) == []
    with pytest.raises(UnknownObjectException):
        _ = repo.get_issue(number).get_comment(created.id).body


def test_human_comment_has_user_shape_and_association(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    server.set_permission(repo_name, "maria", "maintain")
    human = server.add_user_comment(repo_name, number, "maria", "/recheck")
    stranger = server.add_user_comment(repo_name, number, "zed", "+1")
    assert human["user"]["type"] == "User" and human["performed_via_github_app"] is None
    assert human["author_association"] == "COLLABORATOR"
    assert stranger["author_association"] == "NONE"
    listed = github.get_repo(repo_name, lazy=True).get_issue(number).get_comments()
    assert [c.user.login for c in listed] == ["maria", "zed"]


def test_reactions_are_idempotent_per_content(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    comment = server.add_user_comment(repo_name, number, "bob", "/recheck")
    requester = github.get_repo(repo_name, lazy=True)._requester
    path = f"/repos/{repo_name}/issues/comments/{comment['id']}/reactions"
    first = requester.requestJson("POST", path, input={"content": "eyes"})
    again = requester.requestJson("POST", path, input={"content": "eyes"})
    assert (first[0], again[0]) == (201, 200)
    issue = github.get_repo(repo_name, lazy=True).get_issue(number)
    issue.get_comment(comment["id"]).create_reaction("rocket")
    assert server.reactions(repo_name, comment["id"]) == ["eyes", "rocket"]
    listed = issue.get_comment(comment["id"]).get_reactions()
    assert [(r.content, r.user.login) for r in listed] == [
        ("eyes", server.bot_login),
        ("rocket", server.bot_login),
    ]
    with pytest.raises(GithubException) as refused:
        requester.requestJsonAndCheck("POST", path, input={"content": "party"})
    assert refused.value.status == 422


# --- check runs and permissions
def test_check_runs_create_update_list(server, github, repo_name):
    head = open_pr(server, repo_name)["head"]["sha"]
    repo = github.get_repo(repo_name, lazy=True)
    run = repo.create_check_run(name="prbot", head_sha=head, status="in_progress")
    assert (run.status, run.conclusion, len(run.pull_requests)) == ("in_progress", None, 1)
    run.edit(conclusion="neutral", output={"title": "2 warnings", "summary": "see comment"})
    assert run.status == "completed" and run.completed_at is not None
    repo.create_check_run(name="other", head_sha=head, status="queued")
    listed = list(repo.get_commit(head).get_check_runs(check_name="prbot"))
    assert [(r.id, r.conclusion, r.output.title) for r in listed] == [
        (run.id, "neutral", "2 warnings")
    ]
    assert [r["name"] for r in server.check_runs(repo_name, head)] == ["prbot", "other"]
    with pytest.raises(GithubException) as unknown_sha:
        repo.create_check_run(name="prbot", head_sha="0" * 40)
    assert unknown_sha.value.status == 422


def test_collaborator_permission_folds_roles_as_github(server, github, repo_name):
    repo = github.get_repo(repo_name, lazy=True)
    expected = {
        "admin": ("admin", "admin"),
        "maintain": ("write", "maintain"),
        "write": ("write", "write"),
        "triage": ("read", "triage"),
        "read": ("read", "read"),
        "none": ("none", "none"),
    }
    for role, answer in expected.items():
        server.set_permission(repo_name, f"user-{role}", role)
        _, data = repo._requester.requestJsonAndCheck(
            "GET", f"{repo.url}/collaborators/user-{role}/permission"
        )
        assert (data["permission"], data["role_name"]) == answer
        assert data["user"]["login"] == f"user-{role}"
    assert repo.get_collaborator_permission("acme") == "admin"  # the owner
    assert repo.get_collaborator_permission("passer-by") == "read"  # public repository


# --- GraphQL
QUERY = """
query {
  repository(owner: "%s", name: "%s") {
    %s
  }
}
"""
FIELDS = (
    "number title body createdAt headRefOid author { login } "
    "files(first: 100) { nodes { path additions deletions } }"
)


def graphql_query(repo_name: str, numbers: list[int]) -> str:
    owner, name = repo_name.split("/")
    aliases = " ".join(f"pr{n}: pullRequest(number: {n}) {{ {FIELDS} }}" for n in numbers)
    return QUERY % (owner, name, aliases)


def test_graphql_answers_aliased_pull_requests(server, github, repo_name):
    one = open_pr(server, repo_name, branch="one", body="first", author="alice")
    two = open_pr(server, repo_name, branch="two", body=None, title="Second")
    _, data = github.requester.graphql_query(
        graphql_query(repo_name, [one["number"], two["number"]]), {}
    )
    repository = data["data"]["repository"]
    first = repository[f"pr{one['number']}"]
    assert first["title"] == "Double the output" and first["body"] == "first"
    assert first["author"] == {"login": "alice"}
    assert first["headRefOid"] == one["head"]["sha"]
    assert first["files"]["nodes"] == [{"path": "src/model.py", "additions": 1, "deletions": 1}]
    assert repository[f"pr{two['number']}"]["title"] == "Second"


def test_graphql_missing_pull_is_null_with_not_found_error(server, repo_name):
    one = open_pr(server, repo_name)["number"]
    token = server.create_installation_token(INSTALLATION)
    response = httpx.post(
        f"{server.url}/graphql",
        json={"query": graphql_query(repo_name, [one, 999])},
        headers={"Authorization": f"bearer {token}"},
    )
    body = response.json()
    assert response.status_code == 200
    assert body["data"]["repository"]["pr999"] is None
    assert body["data"]["repository"][f"pr{one}"]["number"] == one
    assert body["errors"][0]["type"] == "NOT_FOUND"
    other = httpx.post(
        f"{server.url}/graphql",
        json={"query": "{ viewer { login } }"},
        headers={"Authorization": f"bearer {token}"},
    )
    assert "data" not in other.json() and other.json()["errors"]


# --- git over HTTP
def test_git_clone_and_fetch_pull_ref(server, repo_name, tmp_path):
    opened = open_pr(server, repo_name)
    token = server.create_installation_token(INSTALLATION)
    clone = tmp_path / "clone"
    run_git("clone", "-q", server.git_url(repo_name), str(clone), token=token)
    assert (clone / "src" / "model.py").read_text() == "def forward(x):\n    return x\n"
    ref = f"refs/pull/{opened['number']}/head"
    run_git("fetch", "-q", "origin", ref, cwd=clone, token=token)
    assert run_git("rev-parse", "FETCH_HEAD", cwd=clone) == opened["head"]["sha"]
    new_head = server.push(repo_name, opened["number"], {"src/extra.py": "y = 1\n"})
    run_git("fetch", "-q", "origin", ref, cwd=clone, token=token)
    assert run_git("rev-parse", "FETCH_HEAD", cwd=clone) == new_head
    assert server.count_calls("POST", f"/{repo_name}.git/git-upload-pack") >= 3


def test_git_fetches_a_pull_head_by_sha(server, repo_name, tmp_path):
    opened = open_pr(server, repo_name)
    token = server.create_installation_token(INSTALLATION)
    mirror = tmp_path / "mirror.git"
    run_git("init", "-q", "--bare", str(mirror))
    head = opened["head"]["sha"]
    run_git("fetch", "-q", server.git_url(repo_name), head, cwd=mirror, token=token)
    assert run_git("cat-file", "-t", head, cwd=mirror) == "commit"


def pkt_line(text: str) -> bytes:
    return f"{len(text) + 4:04x}{text}".encode()


def test_git_upload_pack_accepts_gzip_bodies(server, repo_name):
    head = open_pr(server, repo_name)["head"]["sha"]
    token = server.create_installation_token(INSTALLATION)
    basic = httpx.BasicAuth("x-access-token", token)
    # A protocol v0 negotiation, gzipped as git does for large requests.
    request = pkt_line(f"want {head} ofs-delta\n") + b"0000" + pkt_line("done\n")
    response = httpx.post(
        f"{server.git_url(repo_name)}/git-upload-pack",
        content=gzip.compress(request),
        headers={
            "Content-Type": "application/x-git-upload-pack-request",
            "Content-Encoding": "gzip",
        },
        auth=basic,
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-git-upload-pack-result"
    assert b"PACK" in response.content


def test_git_refused_without_a_live_token(server, repo_name, tmp_path):
    with pytest.raises(RuntimeError):
        run_git("clone", "-q", server.git_url(repo_name), str(tmp_path / "anon"))
    with pytest.raises(RuntimeError):
        run_git("clone", "-q", server.git_url(repo_name), str(tmp_path / "bad"), token="ghs_x")
    other = server.create_installation_token(OTHER_INSTALLATION)
    with pytest.raises(RuntimeError):
        run_git("clone", "-q", server.git_url(repo_name), str(tmp_path / "other"), token=other)
    assert server.count_calls("GET", f"/{repo_name}.git/info/refs") >= 3
    assert not (tmp_path / "anon" / "README.md").exists()


# --- authentication
def test_bad_jwt_and_bad_token_get_401(server, repo_name):
    stranger_key = generate_private_key_pem()
    integration = GithubIntegration(
        auth=Auth.AppAuth(server.app_id, stranger_key), base_url=server.url, **NO_PACING
    )
    with pytest.raises(GithubException) as bad_signature:
        integration.get_app()
    assert bad_signature.value.status == 401
    wrong_app = GithubIntegration(
        auth=Auth.AppAuth(server.app_id + 1, server.private_key_pem),
        base_url=server.url,
        **NO_PACING,
    )
    with pytest.raises(GithubException) as bad_issuer:
        wrong_app.get_access_token(INSTALLATION)
    assert bad_issuer.value.status == 401
    bogus = Github(auth=Auth.Token("ghs_not_a_real_token"), base_url=server.url, **NO_PACING)
    with pytest.raises(BadCredentialsException):
        bogus.get_repo(repo_name)


def test_integration_mints_tokens_and_expired_ones_are_refused(server, repo_name):
    integration = GithubIntegration(
        auth=Auth.AppAuth(server.app_id, server.private_key_pem), base_url=server.url, **NO_PACING
    )
    assert integration.get_app().slug == "prbot"
    access = integration.get_access_token(INSTALLATION)
    assert access.token.startswith("ghs_") and access.expires_at is not None
    gh = integration.get_github_for_installation(INSTALLATION)
    assert gh.get_repo(repo_name, lazy=True).default_branch == "main"
    token_client = Github(auth=Auth.Token(access.token), base_url=server.url, **NO_PACING)
    assert token_client.get_repo(repo_name).name == repo_name.split("/")[1]
    server.expire_tokens(access.token)
    with pytest.raises(BadCredentialsException):
        token_client.get_repo(repo_name)


def test_other_installation_cannot_see_the_repo(server, repo_name):
    with pytest.raises(UnknownObjectException):
        client(server, OTHER_INSTALLATION).get_repo(repo_name)


def test_rate_limit_headers_and_error_shape(server, github, repo_name):
    github.get_repo(repo_name)
    remaining, limit = github.rate_limiting
    assert limit == 5000 and 0 < remaining < 5000
    token = server.create_installation_token(INSTALLATION)
    response = httpx.get(
        f"{server.url}/repos/{repo_name}/nothing-here", headers={"Authorization": f"token {token}"}
    )
    assert response.status_code == 404
    assert response.json()["message"] == "Not Found"
    assert response.json()["documentation_url"].startswith("https://docs.github.com/")


# --- fault injection
def test_injected_status_surfaces_as_github_exception(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    repo = github.get_repo(repo_name, lazy=True)
    server.inject("GET", rf"/repos/{repo_name}/pulls/\d+$", status=502)
    with pytest.raises(GithubException) as failed:
        _ = repo.get_pull(number).title
    assert failed.value.status == 502
    assert repo.get_pull(number).title == "Double the output"  # times=1: the next one is fine
    statuses = [c.status for c in server.calls if c.path == f"/repos/{repo_name}/pulls/{number}"]
    assert statuses[-2:] == [502, 200]


def test_injected_rate_limit_carries_message_and_headers(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    server.inject(
        "GET",
        rf"/repos/{repo_name}/pulls/\d+$",
        status=403,
        message="API rate limit exceeded for installation ID 7.",
        headers={"X-RateLimit-Remaining": "0", "Retry-After": "1"},
    )
    with pytest.raises(RateLimitExceededException) as limited:
        _ = github.get_repo(repo_name, lazy=True).get_pull(number).title
    assert limited.value.status == 403
    assert limited.value.headers["retry-after"] == "1"


def test_injection_after_effect_keeps_the_effect(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    issue = github.get_repo(repo_name, lazy=True).get_issue(number)
    server.inject("POST", r"/issues/\d+/comments$", status=500, after_effect=True)
    with pytest.raises(GithubException):
        issue.create_comment("written before the crash")
    assert [c["body"] for c in server.comments(repo_name, number)] == ["written before the crash"]
    server.inject("POST", r"/issues/\d+/comments$", status=500)
    with pytest.raises(GithubException):
        issue.create_comment("never written")
    assert len(server.comments(repo_name, number)) == 1


def test_injected_delay_still_answers(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    server.inject("GET", r"/pulls/\d+$", delay=0.05, times=2)
    repo = github.get_repo(repo_name, lazy=True)
    assert [repo.get_pull(number).title for _ in range(3)] == ["Double the output"] * 3


def test_a_held_request_is_seen_on_arrival(server, repo_name):
    number = open_pr(server, repo_name)["number"]
    token = server.create_installation_token(INSTALLATION)
    path = f"/repos/{repo_name}/pulls/{number}"
    server.inject("GET", f"{path}$", delay=30)
    answered = threading.Event()

    def slow_request() -> None:
        httpx.get(f"{server.url}{path}", headers={"Authorization": f"token {token}"}, timeout=60)
        answered.set()

    assert server.pending_injections() == 1
    threading.Thread(target=slow_request, daemon=True).start()
    assert wait_until(lambda: server.count_arrivals("GET", path) == 1)
    assert server.pending_injections() == 0  # used up on arrival, not on answer
    assert server.count_calls("GET", path) == 0 and not answered.is_set()


def test_a_hold_parks_requests_until_released(server, repo_name):
    number = open_pr(server, repo_name)["number"]
    token = server.create_installation_token(INSTALLATION)
    path = f"/repos/{repo_name}/pulls/{number}"
    hold = server.hold("GET", f"{path}$")
    statuses: list[int] = []

    def request() -> None:
        headers = {"Authorization": f"token {token}"}
        statuses.append(httpx.get(f"{server.url}{path}", headers=headers, timeout=60).status_code)

    parked = threading.Thread(target=request, daemon=True)
    parked.start()
    assert hold.wait_until_held() == [path]
    assert server.count_calls("GET", path) == 0 and statuses == []
    request()  # the hold caught one request (times=1); the next one goes straight through
    assert statuses == [200]
    hold.release()
    parked.join(timeout=60)
    assert statuses == [200, 200] and server.count_calls("GET", path) == 2


def test_a_hold_after_effect_parks_the_answer_not_the_effect(server, github, repo_name):
    number = open_pr(server, repo_name)["number"]
    issue = github.get_repo(repo_name, lazy=True).get_issue(number)
    with server.hold("POST", r"/issues/\d+/comments$", after_effect=True) as hold:
        posting = threading.Thread(target=issue.create_comment, args=("made, not yet answered",))
        posting.start()
        hold.wait_until_held()
        assert [c["body"] for c in server.comments(repo_name, number)] == ["made, not yet answered"]
        assert server.count_calls("POST", f"/repos/{repo_name}/issues/{number}/comments") == 0
    posting.join(timeout=60)
    assert server.count_calls("POST", f"/repos/{repo_name}/issues/{number}/comments") == 1


def test_stopping_the_server_releases_its_holds(tmp_path):
    with FakeGitHub(root=tmp_path / "gh") as gh:
        hold = gh.hold("GET", "^/rate_limit$", times=None)
        outcome: list[object] = []

        def request() -> None:
            try:
                outcome.append(httpx.get(f"{gh.url}/rate_limit", timeout=30).status_code)
            except httpx.HTTPError as exc:
                outcome.append(exc)

        parked = threading.Thread(target=request, daemon=True)
        parked.start()
        hold.wait_until_held()
    parked.join(timeout=30)
    assert hold.released and not parked.is_alive() and len(outcome) == 1


def wait_until(predicate, attempts: int = 500) -> bool:
    """Poll a condition a bounded number of times (no wall-clock assertion)."""
    for _ in range(attempts):
        if predicate():
            return True
        threading.Event().wait(0.01)
    return False


# --- webhook payloads
def test_pull_request_payloads_have_real_shapes(server, repo_name):
    opened = open_pr(server, repo_name, body=None, draft=True)
    number = opened["number"]
    event = server.pull_request_event(repo_name, number, "opened")
    assert set(event) == {
        "action",
        "number",
        "pull_request",
        "repository",
        "installation",
        "sender",
    }
    assert event["installation"]["id"] == INSTALLATION and event["installation"]["node_id"]
    pull = event["pull_request"]
    for key in ("body", "closed_at", "merged_at", "milestone", "assignee", "auto_merge"):
        assert key in pull and pull[key] is None
    assert pull["draft"] is True and pull["head"]["repo"]["full_name"] == repo_name
    json.dumps(event)  # plain JSON all the way down
    assert_own_urls(server, event)

    old_head = opened["head"]["sha"]
    new_head = server.push(repo_name, number, {"src/new.py": "z = 3\n"})
    sync = server.pull_request_event(repo_name, number, "synchronize")
    assert (sync["before"], sync["after"]) == (old_head, new_head)
    assert sync["pull_request"]["head"]["sha"] == new_head

    server.edit_pull_request(repo_name, number, title="Better title", body="Now with a body")
    edited = server.pull_request_event(repo_name, number, "edited")
    assert edited["changes"] == {
        "title": {"from": "Double the output"},
        "body": {"from": None},
    }
    server.close_pull_request(repo_name, number)
    closed = server.pull_request_event(repo_name, number, "closed")
    assert closed["pull_request"]["state"] == "closed" and closed["pull_request"]["closed_at"]
    assert closed["pull_request"]["merged"] is False
    with pytest.raises(ValueError):
        server.pull_request_event(repo_name, number, "exploded")


def test_pull_request_from_a_fork(server, github, repo_name):
    opened = open_pr(server, repo_name, branch="patch-1", fork_owner="alice", author="alice")
    head = opened["head"]
    assert head["label"] == "alice:patch-1"
    assert head["repo"]["fork"] is True
    assert head["repo"]["full_name"] == f"alice/{repo_name.split('/')[1]}"
    assert opened["base"]["repo"]["full_name"] == repo_name
    event = server.pull_request_event(repo_name, opened["number"], "opened")
    assert event["pull_request"]["head"]["repo"]["owner"]["login"] == "alice"
    run = github.get_repo(repo_name, lazy=True).create_check_run(
        name="prbot", head_sha=head["sha"], status="queued"
    )
    assert run.pull_requests == []  # as on GitHub, fork PRs are not listed on check runs


def test_issue_comment_installation_and_ping_payloads(server, repo_name):
    number = open_pr(server, repo_name)["number"]
    comment = server.add_user_comment(repo_name, number, "maria", "/recheck please")
    event = server.issue_comment_event(repo_name, number, comment)
    assert event["action"] == "created"
    assert event["issue"]["number"] == number
    assert event["issue"]["pull_request"]["url"].endswith(f"/pulls/{number}")
    assert event["comment"]["body"] == "/recheck please"
    assert event["sender"]["login"] == "maria"
    assert event["installation"]["id"] == INSTALLATION
    assert_own_urls(server, event)

    install = server.installation_event(INSTALLATION)
    assert install["installation"]["account"]["login"] == "acme"
    assert repo_name in [r["full_name"] for r in install["repositories"]]
    assert install["installation"]["suspended_at"] is None

    ping = server.ping_event()
    assert ping["zen"] and ping["hook"]["app_id"] == server.app_id and ping["hook_id"]


def test_shared_fixture_serves_a_fresh_server(github_server):
    github_server.add_installation(1, "acme")
    github_server.create_repo("acme/solo", installation_id=1)
    token = github_server.create_installation_token(1)
    response = httpx.get(
        f"{github_server.url}/repos/acme/solo", headers={"Authorization": f"token {token}"}
    )
    assert response.json()["clone_url"] == github_server.git_url("acme/solo")


# --- the pieces underneath, without HTTP
def test_app_jwt_checks_issuer_lifetime_and_expiry(server):
    now = int(time.time())

    def token(**claims: Any) -> str:
        body = {"iat": now - 30, "exp": now + 300, "iss": str(server.app_id), **claims}
        return jwt.encode(body, server.private_key_pem, algorithm="RS256")

    verify_app_jwt(token(), server.public_key_pem, server.app_id)
    refused = [
        token(iss="999"),
        token(exp=now + 3600),  # GitHub caps app JWTs at ten minutes
        token(iat=now - 1200, exp=now - 900),  # expired
        token(iat=now + 600, exp=now + 900),  # issued in the future
        "not.a.jwt",
    ]
    for bad in refused:
        with pytest.raises(AuthError):
            verify_app_jwt(bad, server.public_key_pem, server.app_id)


def test_binary_files_are_listed_without_a_patch(tmp_path):
    repo = BareRepo(tmp_path / "bin.git")
    repo.init("main")
    base = repo.commit_files("main", {"a.txt": "a\n"}, message="base", author="x", parent=None)
    head = repo.commit_files(
        "topic", {"blob.bin": "\0\1\2binary", "a.txt": "b\n"}, message="m", author="x", parent=base
    )
    entries = {e.filename: e for e in repo.diff(base, head)}
    assert entries["blob.bin"].patch is None and entries["blob.bin"].status == "added"
    assert entries["a.txt"].patch == "@@ -1 +1 @@\n-a\n+b"


def test_pagination_links_name_every_neighbour():
    request = ApiRequest("GET", "/repos/o/r/pulls", {"state": "open", "page": "2"}, {}, b"")
    chunk, headers = paginate("http://127.0.0.1:9", request, list(range(70)))
    assert chunk == list(range(30, 60))
    links = dict(
        (rel.split('"')[1], url.strip(" <>"))
        for url, rel in (part.split(";") for part in headers["Link"].split(","))
    )
    assert set(links) == {"prev", "next", "last", "first"}
    assert links["next"] == "http://127.0.0.1:9/repos/o/r/pulls?state=open&page=3&per_page=30"
    assert links["last"].endswith("page=3&per_page=30")
