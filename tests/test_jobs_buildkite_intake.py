"""POST /webhooks/buildkite over real HTTP: signed deliveries stored once, the rest refused
with nothing stored (bad token, bad signature, stale timestamp, oversized, malformed)."""

from __future__ import annotations

import json
import time

import httpx
from intake_helpers import intake

from bot.events.buildkite import sign
from bot.intake.buildkite import delivery_guid
from bot.runtime.settings import CiSettings
from bot.store import deliveries
from bot.store.queue import Queue
from bot.testing.buildkite_server import FakeBuildkite

TOKEN = "bk-webhook-token"
CI = CiSettings(buildkite_webhook_tokens=(TOKEN,))


def finished(build_id: str = "b-1", job_state: str = "passed") -> dict:
    return {
        "event": "job.finished",
        "build": {"id": build_id, "number": 3, "state": "running", "meta_data": {}},
        "job": {"id": "j-1", "state": job_state, "step_key": "v1-attention-b200"},
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


def test_the_plain_token_header_is_accepted(engine, tmp_path) -> None:
    body = json.dumps(finished()).encode()
    with intake(engine, tmp_path, ci=CI) as url:
        ok = post(url, body, **{"X-Buildkite-Token": TOKEN, "X-Buildkite-Event": "job.finished"})
        assert ok.status_code == 202


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
        big = b"x" * (2 * 1024 * 1024 + 1)  # README: 413 over 2 MiB
        signed = {**event, "X-Buildkite-Signature": sign(big, TOKEN, now)}
        assert post(url, big, **signed).status_code == 413
    with intake(engine, tmp_path) as url:  # no token configured: nothing is accepted
        signed = {**event, "X-Buildkite-Signature": sign(body, TOKEN, now)}
        assert post(url, body, **signed).status_code == 401
    assert deliveries.count_deliveries(engine) == 0 and Queue(engine).jobs() == []


def test_long_ids_make_a_bounded_guid() -> None:
    assert delivery_guid("short") == "short"
    assert len(delivery_guid("x" * 500)) <= 100
