"""The intake's body reading over real HTTP: deadline, spool, budget, size cap."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from intake_helpers import intake, signed_headers

from bot.intake.body import SPOOL_MEMORY_BYTES
from bot.store import deliveries

MIB = 1024 * 1024


def _raw(url: str, request: bytes, *, read_timeout: float = 30) -> str:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=read_timeout) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer.decode("latin-1")


@pytest.fixture
def sqlite_engine(tmp_path):
    from bot.store.db import make_engine, migrate

    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    yield engine
    engine.dispose()


def test_a_body_that_stops_arriving_gets_408_and_the_connection_closed(sqlite_engine, tmp_path):
    with intake(sqlite_engine, tmp_path, body_timeout=0.5) as url:
        answer = _raw(
            url,
            b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
            b"X-Hub-Signature-256: sha256=" + b"0" * 64 + b"\r\n\r\n" + b"{" * 10,
        )
    assert answer.startswith("HTTP/1.1 408") and "connection: close" in answer.lower()


def test_a_large_signed_body_goes_through_the_disk_spool_intact(sqlite_engine, tmp_path):
    payload = {"action": "created", "installation": {"id": 5}, "pad": "p" * (3 * MIB)}
    body = json.dumps(payload).encode()
    assert len(body) > SPOOL_MEMORY_BYTES
    with intake(sqlite_engine, tmp_path) as url:
        response = httpx.post(
            f"{url}/webhooks/github",
            content=body,
            headers=signed_headers(body, "installation", "big"),
            timeout=60,
        )
    assert response.status_code == 202, response.text
    stored = deliveries.get_delivery(sqlite_engine, 1)
    assert stored.body == body
    assert list((tmp_path / "intake").iterdir()) == []  # the spool file is gone


def test_a_chunked_upload_past_the_in_flight_budget_is_503(sqlite_engine, tmp_path):
    def chunks():
        for _ in range(8):
            yield b"x" * MIB

    with intake(sqlite_engine, tmp_path, max_inflight_bytes=2 * MIB) as url:
        response = httpx.post(
            f"{url}/webhooks/github",
            content=chunks(),  # no Content-Length: claimed as it arrives
            headers={"X-Hub-Signature-256": "sha256=" + "0" * 64},
            timeout=60,
        )
        assert response.status_code == 503 and response.headers["retry-after"] == "5"
        # The claim is released: a normal delivery goes through afterwards.
        body = json.dumps({"zen": "hi", "hook_id": 1}).encode()
        ping = httpx.post(
            f"{url}/webhooks/github", content=body, headers=signed_headers(body, "ping"), timeout=30
        )
        assert ping.status_code == 200


def test_a_declared_body_over_the_cap_is_413_before_reading(sqlite_engine, tmp_path):
    with intake(sqlite_engine, tmp_path) as url:
        answer = _raw(
            url,
            b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n"
            b"X-Hub-Signature-256: sha256=" + b"0" * 64 + b"\r\n\r\n",
        )
    assert answer.startswith("HTTP/1.1 413")


def test_healthz_answers_while_a_delivery_waits_on_the_database(
    sqlite_engine, tmp_path, monkeypatch
):
    # The database write happens on the writer thread, never on the event loop: while one
    # delivery's write is held, the same server still answers /healthz (and then the
    # delivery, once the write goes on).
    import threading

    from bot.intake.writer import DeliveryWriter

    entered, release = threading.Event(), threading.Event()
    original = DeliveryWriter._write

    def held_write(self, batch, forget=0):  # noqa: ANN001, ANN202
        if batch:
            entered.set()
            release.wait(30)  # a hang guard, released below
        return original(self, batch, forget)

    monkeypatch.setattr(DeliveryWriter, "_write", held_write)
    body = json.dumps({"zen": "x", "hook_id": 1}).encode()
    answers: list[int] = []
    with intake(sqlite_engine, tmp_path) as url:
        posting = threading.Thread(
            target=lambda: answers.append(
                httpx.post(
                    f"{url}/webhooks/github",
                    content=body,
                    headers=signed_headers(body, "check_suite"),
                    timeout=60,
                ).status_code
            )
        )
        posting.start()
        try:
            assert entered.wait(30), "the delivery never reached the database write"
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
            assert answers == []  # the delivery is still held at its write
        finally:
            release.set()
            posting.join(60)
    assert answers and answers[0] < 500  # answered once the write went on
