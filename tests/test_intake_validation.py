"""Signed but odd payloads over real HTTP: 400, stored as rejected with the reason, no job.

Each case is one the red-team pass found (issue 8, item 10), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json

import httpx
import pytest
from intake_helpers import intake, signed_headers

from bot.store import deliveries
from bot.store.queue import Queue

REPO = "acme/widgets"


@pytest.fixture
def pull_event(github_server) -> dict:
    github_server.add_installation(7, "acme")
    github_server.create_repo(REPO, installation_id=7, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"})
    number = github_server.open_pull_request(REPO, head_branch="feature", title="T")["number"]
    return github_server.pull_request_event(REPO, number, "opened")


@pytest.fixture
def run_event(github_server, pull_event) -> dict:
    """A fork PR's workflow run finishing on the head (GitHub's workflow_run shape)."""
    head = pull_event["pull_request"]["head"]["sha"]
    actions = github_server.actions
    run_id = actions.add_run(REPO, head_sha=head, title="CI", event="pull_request")
    return actions.finish(run_id, "success")


def _post(url: str, event: str, body: bytes, guid: str) -> httpx.Response:
    return httpx.post(
        f"{url}/webhooks/github", content=body, headers=signed_headers(body, event, guid)
    )


def _deep(depth: int) -> bytes:
    return b'{"action": "opened", "x": ' + b"[" * depth + b"]" * depth + b"}"


def _with(event: dict, path: str, value: object) -> bytes:
    copy = json.loads(json.dumps(event))
    *parents, last = path.split(".")
    target = copy
    for key in parents:
        target = target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return json.dumps(copy).encode()


def _cases(event: dict, run: dict) -> list[tuple[str, str, bytes, str]]:
    """(guid, event name, body, the start of the expected reason)."""
    labeled = {**event, "action": "labeled", "label": "ready"}  # a label is an object
    return [
        (
            "run-huge-installation",
            "workflow_run",
            _with(run, "installation.id", 2**63),
            "installation.id: Input should be less than or equal to 9223372036854775807",
        ),
        (
            "run-no-installation",
            "workflow_run",
            _with(run, "installation", KeyError),
            "installation:",
        ),
        ("run-a-string", "workflow_run", _with(run, "workflow_run", "x"), "workflow_run:"),
        ("run-id-text", "workflow_run", _with(run, "workflow_run.id", "5"), "workflow_run.id:"),
        (
            "run-bad-sha",
            "workflow_run",
            _with(run, "workflow_run.head_sha", 7),
            "workflow_run.head_sha:",
        ),
        ("label-a-string", "pull_request", json.dumps(labeled).encode(), "label:"),
        ("deep", "pull_request", _deep(1000), "JSON is nested deeper than 200 levels"),
        (
            "huge-id",
            "pull_request",
            _with(event, "installation.id", 2**63),
            "installation.id: Input should be less than or equal to 9223372036854775807",
        ),
        (
            "bool-id",
            "pull_request",
            _with(event, "installation.id", True),
            "installation.id: Input should be a valid integer",
        ),
        ("null-repo", "pull_request", _with(event, "repository", None), "repository:"),
        ("no-repo", "pull_request", _with(event, "repository", KeyError), "repository: Field"),
        ("null-pull", "pull_request", _with(event, "pull_request", None), "pull_request:"),
        ("no-pull", "pull_request", _with(event, "pull_request", KeyError), "pull_request:"),
        (
            "bad-number",
            "pull_request",
            _with(event, "pull_request.number", 2**40),
            "pull_request.number:",
        ),
        (
            "no-installation-id",
            "installation",
            json.dumps({"action": "created", "installation": {"id": None}}).encode(),
            "installation.id:",
        ),
        (
            "comment-no-issue",
            "issue_comment",
            json.dumps({"action": "created", "repository": event["repository"]}).encode(),
            "issue: Field required",
        ),
    ]


def test_each_odd_payload_is_400_and_stored_as_rejected(engine, tmp_path, pull_event, run_event):
    cases = _cases(pull_event, run_event)
    with intake(engine, tmp_path) as url:
        for guid, event, body, reason in cases:
            response = _post(url, event, body, guid)
            assert response.status_code == 400, (guid, response.text)
            assert response.json()["status"] == "rejected"
            assert response.json()["message"].startswith(reason), (guid, response.json())
        # A redelivery of a rejected delivery is refused the same way, never a 500.
        guid, event, body, _ = cases[1]
        assert _post(url, event, body, guid).status_code == 400
        # The real payloads themselves are fine.
        accepted = _post(url, "pull_request", json.dumps(pull_event).encode(), "good")
        assert accepted.status_code == 202, accepted.text
        accepted = _post(url, "workflow_run", json.dumps(run_event).encode(), "good-run")
        assert accepted.status_code == 202, accepted.text
    rejected = {d.guid: d for d in deliveries.rejected_deliveries(engine, limit=100)}
    assert set(rejected) == {guid for guid, *_ in cases}
    for guid, _event, _body, reason in cases:
        assert rejected[guid].status == "rejected"
        assert rejected[guid].reason.startswith(reason)
        assert rejected[guid].installation_id is None
    # Rejected deliveries never become jobs: the one accepted delivery is the only job.
    assert Queue(engine).depth()["queued"] == 2
    assert deliveries.count_deliveries(engine) == len(cases) + 2


def test_the_queue_command_lists_rejected_deliveries(
    engine, database_url, tmp_path, pull_event, capsys
):
    from bot.cli import main

    with intake(engine, tmp_path) as url:
        body = _with(pull_event, "installation.id", True)
        assert _post(url, "pull_request", body, "bool-id").status_code == 400
    assert main(["queue", "rejected", "--database-url", database_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["ID", "RECEIVED", "EVENT", "ACTION", "GUID", "REASON"]
    assert "bool-id" in out[1] and "installation.id: Input should be a valid integer" in out[1]


def test_unhandled_actions_are_not_validated_or_stored(engine, tmp_path):
    with intake(engine, tmp_path) as url:
        # (labeled is handled: a label may approve GPU jobs; unlabeled is not)
        body = json.dumps({"action": "unlabeled", "repository": None}).encode()
        response = _post(url, "pull_request", body, "unlabeled")
        assert response.status_code == 200 and response.json()["status"] == "ignored"
    assert deliveries.count_deliveries(engine) == 0


def test_a_clone_url_outside_the_web_transports_is_rejected(engine, tmp_path, pull_event):
    with intake(engine, tmp_path) as url:
        for guid, clone_url in [("file", "file:///etc"), ("ext", "ext::sh -c id")]:
            body = _with(pull_event, "repository.clone_url", clone_url)
            response = _post(url, "pull_request", body, guid)
            assert response.status_code == 400
            assert response.json()["message"].startswith("repository.clone_url:")


def test_a_bug_in_the_intake_is_one_500_and_a_log_line_then_it_goes_on(
    engine, tmp_path, pull_event, monkeypatch, caplog
):
    # The webhook route runs ahead of FastAPI's error middleware (bot/intake/server.py IntakeApp),
    # so it answers its own failures.
    from bot.intake.writer import DeliveryWriter

    real_store = DeliveryWriter.store
    calls = []

    async def store_once_broken(self, headers, body):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug")
        return await real_store(self, headers, body)

    monkeypatch.setattr(DeliveryWriter, "store", store_once_broken)
    body = json.dumps(pull_event).encode()
    with intake(engine, tmp_path) as url:
        broken = _post(url, "pull_request", body, "bug-1")
        again = _post(url, "pull_request", body, "bug-2")
        health = httpx.get(f"{url}/healthz")
    assert broken.status_code == 500 and broken.text == "Internal Server Error"
    assert "webhook intake failed" in caplog.text and "a bug" in caplog.text
    assert again.status_code == 202 and health.status_code == 200
    assert deliveries.count_deliveries(engine) == 1
