"""Hostile input at the intake, on a real uvicorn: a schemathesis run over the app's own
OpenAPI (half the cases signed, so they reach validation), hypothesis mutations of real
payload shapes, and the hand-made worst cases. None may get a 5xx, and the intake must still
answer afterwards."""

from __future__ import annotations

import copy
import json
import socket
from urllib.parse import urlsplit

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from intake_helpers import SECRET, intake, signed_headers
from schemathesis.core import NOT_SET

from bot.events.payloads import PayloadRejected, load_json, validate_event
from bot.events.webhooks import signature_for

FUZZ = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@pytest.fixture
def intake_url(tmp_path):
    from bot.store.db import make_engine, migrate

    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    with intake(engine, tmp_path / "data", body_timeout=2.0) as url:
        yield url
    engine.dispose()


@pytest.fixture
def pull_payloads(github_server):
    gh = github_server
    gh.add_installation(1, "acme")
    gh.create_repo("acme/w", installation_id=1, files={"a.py": "x\n"})
    gh.commit("acme/w", "f", {"a.py": "y\n"})
    number = gh.open_pull_request("acme/w", head_branch="f", title="T")["number"]
    comment = gh.add_user_comment("acme/w", number, "alice", "/recheck")
    return {
        "pull_request": gh.pull_request_event("acme/w", number, "opened"),
        "issue_comment": gh.issue_comment_event("acme/w", number, comment),
        "installation": gh.installation_event(1),
    }


def _post(url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{url}/webhooks/github", content=body, headers=headers, timeout=30)


def _still_answers(url: str) -> None:
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
    assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200


def test_schemathesis_over_the_openapi_finds_no_5xx(intake_url):
    schema = schemathesis.openapi.from_url(f"{intake_url}/openapi.json")
    operation = schema["/webhooks/github"]["POST"]
    statuses = []

    @FUZZ
    @given(case=operation.as_strategy(), sign=st.booleans())
    def fuzz(case, sign):
        body = b"" if case.body is NOT_SET else json.dumps(case.body).encode()
        headers = {str(k): str(v) for k, v in (case.headers or {}).items()}
        headers["Content-Type"] = "application/json"
        if sign:
            headers["X-Hub-Signature-256"] = signature_for(body, SECRET)
        try:
            response = _post(intake_url, body, headers)
        except (httpx.LocalProtocolError, UnicodeEncodeError):
            assume(False)  # a header no HTTP client can send
        statuses.append(response.status_code)
        assert response.status_code < 500, (response.status_code, response.text)

    fuzz()
    assert {401, 200} & set(statuses) and any(s in (200, 202, 400) for s in statuses)
    _still_answers(intake_url)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))


def _replace(payload, path, new):
    mutated = copy.deepcopy(payload)
    target = mutated
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return mutated


def test_mutated_real_payloads_are_validated_or_refused_never_crash(pull_payloads, intake_url):
    cases = [(event, path) for event, p in pull_payloads.items() for path in _paths(p) if path]

    @FUZZ
    @given(choice=st.sampled_from(cases), value=JSON_VALUES)
    def fuzz(choice, value):
        event, path = choice
        mutated = _replace(pull_payloads[event], path, value)
        try:
            validate_event(event, load_json(json.dumps(mutated)))
        except PayloadRejected as exc:
            assert str(exc) and "\n" not in str(exc)
        body = json.dumps(mutated).encode()
        response = _post(intake_url, body, signed_headers(body, event))
        assert response.status_code in (200, 202, 400), (path, value, response.text)

    fuzz()
    _still_answers(intake_url)


@pytest.mark.parametrize(
    "path",
    [
        ("pull_request", "title"),
        ("pull_request", "user", "login"),
        ("pull_request", "head", "ref"),
        ("pull_request", "head", "sha"),
        ("repository", "full_name"),
        ("action",),
    ],
)
def test_null_where_the_docs_say_string(pull_payloads, intake_url, path):
    body = json.dumps(_replace(pull_payloads["pull_request"], path, None)).encode()
    response = _post(intake_url, body, signed_headers(body, "pull_request"))
    assert response.status_code in (200, 202, 400)  # 200: a null action is not handled


def test_json_nested_100000_deep_is_a_400(intake_url):
    body = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    response = _post(intake_url, body, signed_headers(body, "pull_request"))
    assert response.status_code == 400 and "nested deeper" in response.json()["message"]
    _still_answers(intake_url)


def test_bodies_over_25_mib_with_and_without_a_true_length(intake_url):
    big = b" " * (25 * 1024 * 1024 + 1)
    assert _post(intake_url, big, signed_headers(big, "pull_request")).status_code == 413

    def chunks():
        for _ in range(26):
            yield b" " * (1024 * 1024)

    headers = signed_headers(b"", "pull_request")
    response = httpx.post(
        f"{intake_url}/webhooks/github", content=chunks(), headers=headers, timeout=30
    )
    assert response.status_code == 413
    # A Content-Length that lies (says 64, sends 26 MiB): only 64 bytes are the body, the
    # signature over them fails, and the rest is never taken as a request.
    status = _raw(
        intake_url,
        b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\n"
        + _header_block(signed_headers(b"{}", "ping"))
        + b"Content-Length: 64\r\n\r\n",
        b"{" * (26 * 1024 * 1024),
    )
    assert status in (400, 401)
    _still_answers(intake_url)


def _header_block(headers: dict[str, str]) -> bytes:
    return b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items())


def _raw(url: str, head: bytes, body: bytes = b"") -> int:
    """Send bytes as they are (no client would) and read the answer's status."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head)
        try:
            sock.sendall(body)
        except OSError:
            pass  # the server may close once it has answered
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]) if answer else 0


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""],
)
def test_wrong_content_types_are_refused_not_crashed(intake_url, content_type):
    body = b'{"action": "opened"}'
    headers = {**signed_headers(body, "pull_request"), "Content-Type": content_type}
    assert _post(intake_url, body, headers).status_code in (400, 415)


@pytest.mark.parametrize(
    "event_line",
    [
        b"X-GitHub-Event: pull_request\r\nX-Injected: 1",  # a header smuggled into another
        b"X-GitHub-Event: pull_request\rX-Injected: 1",  # a bare CR
        b"X-GitHub-Event: pull\x00request",  # a NUL
        b"X-GitHub-Event: " + "événement".encode(),  # not ASCII
        b"X-GitHub-Event: " + b"e" * 20_000,  # a very long header
    ],
)
def test_header_injection_gets_no_5xx(intake_url, event_line):
    body = b"{}"
    headers = {k: v for k, v in signed_headers(body, "ping").items() if k != "X-GitHub-Event"}
    head = (
        b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\n"
        + _header_block(headers)
        + event_line
        + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
    )
    status = _raw(intake_url, head, body)
    assert 0 < status < 500 or status == 0  # 0: the server closed a request it cannot parse
    _still_answers(intake_url)
