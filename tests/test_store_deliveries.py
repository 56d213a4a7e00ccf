"""Webhook deliveries: stored once per GUID, each with exactly one job."""

from __future__ import annotations

import json
import threading

import sqlalchemy as sa

from bot.store.deliveries import (
    count_deliveries,
    get_delivery,
    purge_deliveries,
    record_delivery,
)
from bot.store.queue import Queue


def push_body(number: int) -> bytes:
    return json.dumps({"action": "synchronize", "number": number}).encode()


def record(engine: sa.Engine, guid: str, body: bytes = b"{}") -> bool:
    return record_delivery(
        engine,
        guid=guid,
        event="pull_request",
        action="synchronize",
        repo="org/repo",
        installation_id=42,
        body=body,
    )


def test_new_delivery_is_stored_with_a_job(engine: sa.Engine) -> None:
    assert record(engine, "guid-1", push_body(1)) is True
    assert count_deliveries(engine) == 1
    job = Queue(engine).lease("w")
    assert job.kind == "delivery"
    delivery = get_delivery(engine, job.payload["delivery_id"])
    assert (delivery.guid, delivery.event, delivery.action) == (
        "guid-1",
        "pull_request",
        "synchronize",
    )
    assert (delivery.repo, delivery.installation_id) == ("org/repo", 42)
    assert delivery.received_at.tzinfo is not None


def test_duplicate_guid_stores_nothing_and_enqueues_nothing(engine: sa.Engine) -> None:
    assert record(engine, "guid-1", push_body(1)) is True
    assert record(engine, "guid-1", push_body(2)) is False
    assert count_deliveries(engine) == 1
    assert Queue(engine).depth()["queued"] == 1
    delivery = get_delivery(engine, Queue(engine).lease("w").payload["delivery_id"])
    assert delivery.body == push_body(1), "the first body is kept"


def test_body_round_trips_byte_for_byte(engine: sa.Engine) -> None:
    body = bytes(range(256)) * 40 + "ünïcode\r\n\x00".encode()
    assert record(engine, "guid-bytes", body)
    delivery_id = Queue(engine).lease("w").payload["delivery_id"]
    assert get_delivery(engine, delivery_id).body == body


def test_optional_fields_may_be_missing(engine: sa.Engine) -> None:
    assert record_delivery(
        engine, guid="ping", event="ping", action=None, repo=None, installation_id=None, body=b""
    )
    delivery = get_delivery(engine, Queue(engine).lease("w").payload["delivery_id"])
    assert (delivery.action, delivery.repo, delivery.installation_id, delivery.body) == (
        None,
        None,
        None,
        b"",
    )


def test_unknown_delivery_is_none(engine: sa.Engine) -> None:
    assert get_delivery(engine, 12345) is None


def test_concurrent_redeliveries_store_one(engine: sa.Engine) -> None:
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def deliver() -> None:
        barrier.wait()
        results.append(record(engine, "same-guid"))

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]
    assert count_deliveries(engine) == 1
    assert Queue(engine).depth()["queued"] == 1


def test_purge_keeps_recent_deliveries(engine: sa.Engine) -> None:
    record(engine, "guid-1")
    assert purge_deliveries(engine, older_than_seconds=3600) == 0
    assert purge_deliveries(engine, older_than_seconds=-1) == 1
    assert count_deliveries(engine) == 0
