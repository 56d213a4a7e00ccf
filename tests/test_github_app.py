"""bot/github/app.py against the local GitHub test server: auth, each call, and its cost."""

from __future__ import annotations

import json

import pytest
from github import GithubException

from bot.github.app import CHECK_RUN_NAME, GitHubApp
from bot.runtime.settings import ConfigError, Settings

INSTALLATION = 7
REPO = "acme/widgets"
MARKER = "<!-- prbot:test -->"


@pytest.fixture
def app(github_server, tmp_path) -> GitHubApp:
    github_server.add_installation(INSTALLATION, "acme")
    github_server.create_repo(REPO, installation_id=INSTALLATION, files={"a.py": "x = 1\n"})
    key = tmp_path / "app.pem"
    key.write_text(github_server.private_key_pem)
    settings = Settings(
        webhook_secrets=("unused-here",),
        app_id=str(github_server.app_id),
        private_key_path=key,
        github_api_url=github_server.url,
        github_request_interval=0,
        github_write_interval=0,
    )
    return GitHubApp(settings)


def _open(github_server, branch: str = "feature", **fields) -> dict:
    github_server.commit(REPO, branch, {f"{branch}.py": "y = 2\n"}, f"add {branch}")
    return github_server.open_pull_request(
        REPO, head_branch=branch, title=fields.pop("title", f"Add {branch}"), **fields
    )


def test_an_app_without_id_or_key_is_refused_before_any_call():
    with pytest.raises(ConfigError, match="PRBOT_APP_ID"):
        GitHubApp(Settings(github_api_url="http://127.0.0.1:9"))


def test_one_client_and_one_token_per_installation(app, github_server):
    github_server.reset_calls()
    client = app.installation(INSTALLATION)
    assert app.installation(INSTALLATION) is client
    assert client.token() == client.token()
    tokens = f"/app/installations/{INSTALLATION}/access_tokens"
    assert github_server.count_calls("POST", tokens) == 1
    assert app.bot_login() == app.bot_login() == github_server.bot_login
    assert github_server.count_calls("GET", "/app") == 1


def test_get_pull_reads_heads_state_and_author(app, github_server):
    opened = _open(github_server, author="alice")
    pull = app.installation(INSTALLATION).get_pull(REPO, opened["number"])
    assert (pull.number, pull.head_sha, pull.base_sha) == (
        opened["number"],
        opened["head"]["sha"],
        opened["base"]["sha"],
    )
    assert (pull.state, pull.author) == ("open", "alice")
    assert pull.payload["title"] == "Add feature"
    with pytest.raises(GithubException) as missing:
        app.installation(INSTALLATION).get_pull(REPO, 999)
    assert missing.value.status == 404


def test_the_sticky_comment_is_found_by_marker_and_bot_author_and_edited(app, github_server):
    number = _open(github_server)["number"]
    client = app.installation(INSTALLATION)
    # A user quoting the marker does not make their comment ours.
    github_server.add_user_comment(REPO, number, "mallory", f"{MARKER} fake report")
    assert client.find_comment(REPO, number, MARKER, app.bot_login()) is None
    comment_id = client.create_comment(REPO, number, f"{MARKER}\nfirst")
    assert client.find_comment(REPO, number, MARKER, app.bot_login()) == comment_id
    assert client.edit_comment(REPO, comment_id, f"{MARKER}\nsecond")
    bodies = [c["body"] for c in github_server.comments(REPO, number)]
    assert bodies == [f"{MARKER} fake report", f"{MARKER}\nsecond"]
    # Someone deleted it: say so (the publisher then creates a new one), do not raise.
    assert client.edit_comment(REPO, 987654, "gone") is False


def test_check_runs_are_created_found_by_head_and_updated(app, github_server):
    head = _open(github_server)["head"]["sha"]
    client = app.installation(INSTALLATION)
    assert client.find_check_run(REPO, head) is None
    run_id = client.create_check_run(REPO, head, status="in_progress")
    assert client.find_check_run(REPO, head) == run_id
    summary = {"title": "prbot", "summary": "all good"}
    client.update_check_run(REPO, run_id, status="completed", conclusion="success", output=summary)
    (run,) = github_server.check_runs(REPO, head)
    assert (run["name"], run["status"], run["conclusion"]) == (
        CHECK_RUN_NAME,
        "completed",
        "success",
    )


def test_reactions_and_permissions(app, github_server):
    number = _open(github_server)["number"]
    client = app.installation(INSTALLATION)
    comment_id = client.create_comment(REPO, number, "hello")
    client.add_reaction(REPO, comment_id, "eyes")
    assert github_server.reactions(REPO, comment_id) == ["eyes"]
    github_server.set_permission(REPO, "maria", "maintain")
    assert client.permission(REPO, "maria") == ("write", "maintain")
    assert client.permission(REPO, "stranger") == ("read", "read")  # a public repo's reader
    # A user GitHub does not know: no permission, not an error.
    github_server.inject("GET", r"/collaborators/ghost-user/permission$", status=404)
    assert client.permission(REPO, "ghost-user") == ("none", None)
    github_server.inject("GET", r"/collaborators/maria/permission$", status=403)
    with pytest.raises(GithubException) as refused:
        client.permission(REPO, "maria")
    assert refused.value.status == 403


def test_an_edit_github_refuses_is_raised_not_taken_for_a_deleted_comment(app, github_server):
    number = _open(github_server)["number"]
    client = app.installation(INSTALLATION)
    comment_id = client.create_comment(REPO, number, "hello")
    github_server.inject("PATCH", rf"/issues/comments/{comment_id}$", status=403)
    with pytest.raises(GithubException) as refused:
        client.edit_comment(REPO, comment_id, "edited")
    assert refused.value.status == 403
    assert [c["body"] for c in github_server.comments(REPO, number)] == ["hello"]


def test_listing_open_pulls_is_conditional_and_oldest_first(app, github_server):
    first = _open(github_server, "one")["number"]
    second = _open(github_server, "two")["number"]
    client = app.installation(INSTALLATION)
    listed = client.list_open_pulls(REPO, page=1, per_page=100)
    assert listed.status == 200 and listed.etag
    assert [item["number"] for item in json.loads(listed.body)] == [first, second]
    github_server.reset_calls()
    again = client.list_open_pulls(REPO, page=1, per_page=100, etag=listed.etag)
    assert again.status == 304 and again.body == ""
    assert github_server.count_calls("GET", f"/repos/{REPO}/pulls") == 1
    github_server.close_pull_request(REPO, first)
    moved = client.list_open_pulls(REPO, page=1, per_page=100, etag=listed.etag)
    assert moved.status == 200 and [i["number"] for i in json.loads(moved.body)] == [second]
    second_page = client.list_open_pulls(REPO, page=2, per_page=1)
    assert second_page.status == 200 and json.loads(second_page.body) == []


def test_pull_files_asks_for_many_prs_in_one_graphql_call(app, github_server):
    one = _open(github_server, "one")["number"]
    two = _open(github_server, "two")["number"]
    client = app.installation(INSTALLATION)
    github_server.reset_calls()
    answer = client.pull_files(REPO, [one, two, 999])
    assert github_server.count_calls("POST", "/graphql") == 1
    assert answer.status == 200
    repository = json.loads(answer.body)["data"]["repository"]
    assert repository["pr_999"] is None
    files = repository[f"pr_{two}"]["files"]["nodes"]
    assert [f["path"] for f in files] == ["two.py"]
    assert repository[f"pr_{one}"]["headRefOid"] == github_server.repos[REPO].pulls[one].head_sha
