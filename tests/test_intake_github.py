"""The GitHub webhook route on its own (bot/intake/github.py): each step's answer, with a real
writer thread on a real database and no HTTP server, so the hot path is tested as a function.
The same route over uvicorn and `prbot serve` is in tests/test_intake_*.py."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.requests import Request

from bot.intake.body import InflightBudget
from bot.intake.github import GitHubIntake
from bot.intake.writer import DeliveryWriter
from bot.runtime.settings import Settings
from bot.store.deliveries import count_deliveries
from bot.store.inbox import waiting_in_inbox
from bot.testing import FakeGitHub
from tests.intake_helpers import SECRET, signed_headers

REPO = "octo/widgets"


def stored(engine) -> int:
    """Deliveries in the database, once the SQLite intake's inbox has handed them over."""
    deadline = time.monotonic() + 10
    while waiting_in_inbox(engine) and time.monotonic() < deadline:
        time.sleep(0.02)
    return count_deliveries(engine)


def _request(body: bytes, headers: dict[str, str], chunk: int = 4096) -> Request:
    parts = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    messages = [
        {"type": "http.request", "body": part, "more_body": index < len(parts) - 1}
        for index, part in enumerate(parts)
    ]

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/webhooks/github",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-length", str(len(body)).encode())],
    }
    return Request(scope, receive)


@pytest.fixture
def route(engine, tmp_path: Path):
    settings = Settings(webhook_secrets=(SECRET,), data_dir=tmp_path)
    writer = DeliveryWriter(engine).start()
    budget = InflightBudget(settings.max_inflight_bytes)
    intake = GitHubIntake(settings, writer, budget, tmp_path / "intake")
    try:
        yield intake
    finally:
        writer.stop()


def _call(intake: GitHubIntake, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    response = asyncio.run(intake.receive(_request(body, headers)))
    return response.status_code, json.loads(response.body or b"{}")


@pytest.fixture(scope="module")
def opened(tmp_path_factory) -> bytes:
    with FakeGitHub(root=tmp_path_factory.mktemp("github")) as gh:
        gh.add_installation(7, "octo")
        gh.create_repo(REPO, installation_id=7, files={"a.py": "x = 1\n"})
        gh.commit(REPO, "feature", {"a.py": "x = 2\n"})
        number = gh.open_pull_request(REPO, head_branch="feature", title="Change a")["number"]
        return json.dumps(gh.pull_request_event(REPO, number, "opened")).encode()


def test_a_signed_handled_event_is_stored_and_answered_202(route, engine, opened):
    status, answer = _call(route, opened, signed_headers(opened, "pull_request"))
    assert (status, answer["status"]) == (202, "accepted")
    assert stored(engine) == 1
    assert route.budget.claimed == 0  # the body's bytes are given back once it is in


def test_the_same_delivery_twice_is_stored_once(route, engine, opened):
    headers = signed_headers(opened, "pull_request", guid="guid-1")
    first, second = _call(route, opened, headers), _call(route, opened, headers)
    assert first[0] == 202 and second[0] == 200 and stored(engine) == 1


def test_no_or_a_wrong_signature_is_401_and_nothing_is_stored(route, engine, opened):
    headers = signed_headers(opened, "pull_request")
    missing = {k: v for k, v in headers.items() if k != "X-Hub-Signature-256"}
    wrong = {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}
    assert _call(route, opened, missing)[0] == 401
    status, answer = _call(route, opened, wrong)
    assert (status, answer["status"]) == (401, "bad_signature")
    assert stored(engine) == 0


def test_ping_and_events_prbot_does_not_handle_are_answered_but_not_stored(route, engine):
    ping = b'{"zen": "Keep it logically awesome.", "hook_id": 1}'
    assert _call(route, ping, signed_headers(ping, "ping")) == (200, {"status": "pong"})
    push = b'{"ref": "refs/heads/main"}'
    assert _call(route, push, signed_headers(push, "push")) == (200, {"status": "ignored"})
    assert stored(engine) == 0


def test_a_signed_body_prbot_cannot_use_is_400_and_kept_as_rejected(route, engine):
    body = b'{"action": "opened"}'  # no repository, no pull_request
    status, answer = _call(route, body, signed_headers(body, "pull_request"))
    assert status == 400 and answer["status"] == "rejected"
    assert stored(engine) == 1


def test_a_body_over_the_limit_is_413_and_its_bytes_are_given_back(route, engine, opened):
    route.settings = replace(route.settings, max_body_bytes=1024 * 1024)  # 1 MiB
    body = b'{"pad": "' + b"x" * (1024 * 1024 + 1) + b'"}'
    status, answer = _call(route, body, signed_headers(body, "pull_request"))
    assert status == 413 and answer["message"] == "body exceeds 1 MiB"
    assert route.budget.claimed == 0 and stored(engine) == 0


def test_a_full_in_flight_budget_is_503_with_retry_after(route, engine, opened):
    route.budget.claim(route.budget.limit)
    response = asyncio.run(route.receive(_request(opened, signed_headers(opened, "pull_request"))))
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert stored(engine) == 0
