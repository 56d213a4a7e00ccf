"""POST /webhooks/buildkite over real HTTP: signed deliveries stored once, the rest refused
with nothing stored (bad token, bad signature, stale timestamp, oversized, malformed)."""

from __future__ import annotations

import json
import select
import socket
import time

import httpx
from intake_helpers import ServeProcess, intake

from bot.events.buildkite import sign
from bot.intake.buildkite import delivery_guid
from bot.runtime.settings import CiSettings
from bot.store import deliveries
from bot.store.queue import Queue
from bot.testing.buildkite_server import FakeBuildkite, buildkite_time

TOKEN = "bk-webhook-token"
CI = CiSettings(buildkite_webhook_tokens=(TOKEN,))


def finished(build_id: str = "b-1", job_state: str = "passed", at: str | None = None) -> dict:
    at = at or buildkite_time()
    return {
        "event": "job.finished",
        "build": {
            "id": build_id,
            "number": 3,
            "state": "running",
            "meta_data": {},
            "created_at": at,
        },
        "job": {
            "id": "j-1",
            "state": job_state,
            "step_key": "v1-attention-b200",
            "created_at": at,
            "finished_at": at,
        },
    }


def post(url: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/webhooks/buildkite", content=body, headers=headers)


def test_a_signed_delivery_is_stored_once_and_queued(engine, tmp_path) -> None:
    with intake(engine, tmp_path, ci=CI) as url:
        with FakeBuildkite(webhook_url=f"{url}/webhooks/buildkite", webhook_token=TOKEN) as bk:
            assert bk.deliver("job.finished", finished()) == 202
            # Redelivered (same job, same state): harmless.
            assert bk.deliver("job.finished", finished()) == 200
            # The same job's next state is news.
            assert bk.deliver("job.finished", finished(job_state="failed")) == 202
            assert bk.deliver("ping", {"event": "ping"}) == 200
    stored = Queue(engine).jobs()
    assert len(stored) == 2 and deliveries.count_deliveries(engine) == 2
    delivery = deliveries.get_delivery(engine, stored[0].payload["delivery_id"])
    assert (delivery.event, delivery.action) == ("buildkite", "job.finished")
    assert json.loads(delivery.body)["job"]["id"] == "j-1"


def test_the_plain_token_header_is_accepted_for_news_of_now(engine, tmp_path) -> None:
    # The token proves nothing about when: the build's and job's own times must be recent,
    # so a delivery captured once cannot be replayed later (nor one that says no time).
    headers = {"X-Buildkite-Token": TOKEN, "X-Buildkite-Event": "job.finished"}
    stale = finished(at="2020-01-01T00:00:00.000Z")
    timeless = finished()
    for item in (timeless["build"], timeless["job"]):
        item.pop("created_at"), item.pop("finished_at", None)
    with intake(engine, tmp_path, ci=CI) as url:
        for payload in (stale, timeless):
            refused = post(url, json.dumps(payload).encode(), **headers)
            assert refused.status_code == 401 and "X-Buildkite-Token" in refused.text
        assert post(url, json.dumps(finished()).encode(), **headers).status_code == 202
    assert deliveries.count_deliveries(engine) == 1


def test_refused_deliveries_store_nothing(engine, tmp_path) -> None:
    body = json.dumps(finished()).encode()
    now = int(time.time())
    event = {"X-Buildkite-Event": "job.finished"}
    cases = [
        {**event, "X-Buildkite-Token": "wrong"},
        {**event, "X-Buildkite-Signature": sign(body, "wrong", now)},
        {**event, "X-Buildkite-Signature": sign(body, TOKEN, now - 3600)},  # a replay, later
        {**event, "X-Buildkite-Signature": sign(body + b" ", TOKEN, now)},
        {**event, "X-Buildkite-Signature": "timestamp=x,signature="},
        event,
    ]
    with intake(engine, tmp_path, ci=CI) as url:
        for headers in cases:
            response = post(url, body, **headers)
            assert response.status_code == 401, (headers, response.text)
        signed = {**event, "X-Buildkite-Signature": sign(b"[1]", TOKEN, now)}
        assert post(url, b"[1]", **signed).status_code == 400
        big = b"x" * (2 * 1024 * 1024 + 1)  # docs/http.md: 413 over 2 MiB
        signed = {**event, "X-Buildkite-Signature": sign(big, TOKEN, now)}
        assert post(url, big, **signed).status_code == 413
    with intake(engine, tmp_path) as url:  # no token configured: nothing is accepted
        signed = {**event, "X-Buildkite-Signature": sign(body, TOKEN, now)}
        assert post(url, body, **signed).status_code == 401
    assert deliveries.count_deliveries(engine) == 0 and Queue(engine).jobs() == []


def test_long_ids_make_a_bounded_guid() -> None:
    assert delivery_guid("short") == "short"
    assert len(delivery_guid("x" * 500)) <= 100


# --- a real `prbot serve`: the same body deadline and in-flight budget as GitHub's route --------

SERVE_TOKEN = "bk-webhook-token-0123456789"


def _send_head(port: int, length: int, **headers: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)  # a hang guard
    lines = [
        "POST /webhooks/buildkite HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "X-Buildkite-Event: job.finished",
        f"Content-Length: {length}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


def _status(sock: socket.socket) -> int:
    answer = b""
    while b"\r\n" not in answer:
        data = sock.recv(4096)
        if not data:
            break
        answer += data
    return int(answer.split(b" ")[1])


def test_a_trickled_buildkite_body_gets_408_and_odd_timestamps_401(tmp_path) -> None:
    # On main this route had no deadline: 1 byte every 2 s was still open after 70 s, and a
    # timestamp of "²", 400 or 5,000 digits was a 500 (issue 21, item 6).
    with ServeProcess(
        tmp_path,
        "--no-worker",
        "--dry-run",
        PRBOT_INTAKE_BODY_TIMEOUT="2",
        PRBOT_BUILDKITE_WEBHOOK_TOKEN=SERVE_TOKEN,
    ) as serve:
        sock = _send_head(serve.port, 1000, **{"X-Buildkite-Token": SERVE_TOKEN})
        try:
            # 1 byte a second, 996 short at the end. Stop once the answer is there: the
            # intake closes after its 408, and a byte sent to a closed socket is a broken
            # pipe (or a reset that drops the unread answer), not the server's doing.
            for _ in range(4):
                if select.select([sock], [], [], 1)[0]:
                    break
                sock.sendall(b"{")
            assert _status(sock) == 408
        finally:
            sock.close()
        body = json.dumps(finished()).encode()
        for stamp in ("²", "9" * 400, "9" * 5000, "-1", "1e9"):
            headers = {
                "X-Buildkite-Event": b"job.finished",
                "X-Buildkite-Signature": f"timestamp={stamp},signature=ab".encode(),
            }
            answer = httpx.post(f"{serve.url}/webhooks/buildkite", content=body, headers=headers)
            assert answer.status_code == 401, (stamp[:10], answer.text)
        signed = {
            "X-Buildkite-Event": "job.finished",
            "X-Buildkite-Signature": sign(body, SERVE_TOKEN, int(time.time())),
        }
        answer = httpx.post(f"{serve.url}/webhooks/buildkite", content=body, headers=signed)
        assert answer.status_code == 202  # the route was live all along


def test_unsigned_buildkite_bodies_stay_within_the_inflight_budget(tmp_path) -> None:
    # On main 400 unsigned 2 MB bodies took the intake from 99 to 875 MB: nothing budgeted
    # the bytes Buildkite's route held. Now they claim from the same budget as GitHub's.
    with ServeProcess(
        tmp_path,
        "--no-worker",
        "--dry-run",
        PRBOT_INTAKE_MAX_INFLIGHT_MB="8",
        PRBOT_BUILDKITE_WEBHOOK_TOKEN=SERVE_TOKEN,
    ) as serve:
        size = 2 * 1024 * 1024 - 10  # just under the documented 2 MiB limit
        held, refused = [], 0
        try:
            for _ in range(12):
                # The head announces the size: the route claims it before reading a byte,
                # so a refusal comes back at once, while an accepted body waits for its bytes.
                sock = _send_head(serve.port, size, **{"X-Buildkite-Token": "wrong"})
                sock.settimeout(2)
                try:
                    assert _status(sock) == 503
                    refused += 1
                    sock.close()
                except TimeoutError:
                    held.append(sock)
            # 8 MiB holds four bodies just under 2 MiB; every later one is refused at once.
            assert len(held) == 4 and refused == 8, (len(held), refused)
            assert httpx.get(f"{serve.url}/healthz", timeout=20).status_code == 200
        finally:
            for sock in held:
                sock.close()
