"""Webhook deliveries: recorded once per GUID, each with a job to process it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

import sqlalchemy as sa

from bot.store.db import reading
from bot.store.dialect import upsert_for
from bot.store.queue import enqueue_job
from bot.store.schema import deliveries, utcnow

DELIVERY_JOB_KIND = "delivery"


@dataclass
class Delivery:
    """A webhook delivery as received (``body`` byte for byte, for signature re-checks)."""

    id: int
    guid: str
    event: str
    action: str | None
    repo: str | None
    installation_id: int | None
    body: bytes
    received_at: datetime
    status: str = "accepted"
    reason: str | None = None


def record_delivery(
    engine: sa.Engine,
    *,
    guid: str,
    event: str,
    action: str | None,
    repo: str | None,
    installation_id: int | None,
    body: bytes,
) -> bool:
    """Store a delivery and enqueue its job in one transaction; False for a known GUID.

    Runs inside the webhook request, so it is a single short transaction with no read first:
    the unique GUID decides (ON CONFLICT DO NOTHING), and a redelivery changes nothing.
    """
    now = utcnow()
    row = {
        "guid": guid,
        "event": event,
        "action": action,
        "repo": repo,
        "installation_id": installation_id,
        "body": bytes(body),
        "received_at": now,
        "status": "accepted",
    }
    with engine.begin() as connection:
        insert = _insert_unless_known(connection.dialect.name)
        delivery_id = connection.execute(insert, row).scalar_one_or_none()
        if delivery_id is None:
            return False
        enqueue_job(
            connection,
            DELIVERY_JOB_KIND,
            {"delivery_id": delivery_id},
            run_after=now,
            now=now,
        )
        return True


@dataclass(frozen=True)
class IncomingDelivery:
    """One verified delivery to store: accepted (with a job) or rejected (with a reason)."""

    guid: str
    event: str
    action: str | None
    body: bytes
    repo: str | None = None
    installation_id: int | None = None
    reason: str | None = None  # set: rejected
    received_at: datetime | None = None  # None: now (set when it waited in the inbox)


def record_deliveries(engine: sa.Engine, incoming: list[IncomingDelivery]) -> list[bool]:
    """Store several deliveries in one transaction (each accepted one with its job).

    One write lock and one commit for the lot: under a burst the intake's writes queue on
    the database once per batch instead of once per request. Returns, per delivery, whether
    it was new (False for a known GUID, earlier in the database or in this batch).
    """
    with engine.begin() as connection:
        return insert_deliveries(connection, incoming)


def insert_deliveries(connection: sa.Connection, incoming: list[IncomingDelivery]) -> list[bool]:
    """:func:`record_deliveries` inside the caller's open transaction."""
    now = utcnow()
    results = []
    insert = _insert_unless_known(connection.dialect.name)
    for item in incoming:
        row = {
            "guid": item.guid,
            "event": item.event,
            "action": item.action,
            "repo": item.repo,
            "installation_id": item.installation_id,
            "body": bytes(item.body),
            "received_at": item.received_at or now,
            "status": "rejected" if item.reason is not None else "accepted",
            "reason": item.reason,
        }
        delivery_id = connection.execute(insert, row).scalar_one_or_none()
        results.append(delivery_id is not None)
        if delivery_id is not None and item.reason is None:
            enqueue_job(
                connection,
                DELIVERY_JOB_KIND,
                {"delivery_id": delivery_id},
                run_after=now,
                now=now,
            )
    return results


@cache
def _insert_unless_known(dialect_name: str) -> sa.Insert:
    # Built once: at hundreds of deliveries a second, building the statement each time costs
    # as much as running it. Values come as parameters.
    return (
        upsert_for(dialect_name, deliveries)
        .on_conflict_do_nothing(index_elements=[deliveries.c.guid])
        .returning(deliveries.c.id)
    )


def record_rejected_delivery(
    engine: sa.Engine,
    *,
    guid: str,
    event: str,
    action: str | None,
    body: bytes,
    reason: str,
) -> bool:
    """Store a signed delivery that failed validation, with its reason and no job.

    False when the GUID is already known (a redelivery of it changes nothing). Repo and
    installation stay empty: they come from the payload that did not validate.
    """
    row = {
        "guid": guid,
        "event": event,
        "action": action,
        "repo": None,
        "installation_id": None,
        "body": bytes(body),
        "received_at": utcnow(),
        "status": "rejected",
        "reason": reason,
    }
    with engine.begin() as connection:
        insert = _insert_unless_known(connection.dialect.name)
        return connection.execute(insert, row).scalar_one_or_none() is not None


def rejected_deliveries(engine: sa.Engine, limit: int = 50) -> list[Delivery]:
    """Rejected deliveries, newest first (without their bodies, which may be large)."""
    columns = [c for c in deliveries.c if c.name != "body"]
    with reading(engine) as connection:
        rows = connection.execute(
            sa.select(*columns)
            .where(deliveries.c.status == "rejected")
            .order_by(deliveries.c.received_at.desc(), deliveries.c.id.desc())
            .limit(limit)
        ).all()
    return [
        Delivery(
            id=row.id,
            guid=row.guid,
            event=row.event,
            action=row.action,
            repo=row.repo,
            installation_id=row.installation_id,
            body=b"",
            received_at=row.received_at,
            status=row.status,
            reason=row.reason,
        )
        for row in rows
    ]


def get_delivery(engine: sa.Engine, delivery_id: int) -> Delivery | None:
    """A stored delivery by id, or None."""
    with reading(engine) as connection:
        row = connection.execute(
            sa.select(deliveries).where(deliveries.c.id == delivery_id)
        ).first()
    if row is None:
        return None
    return Delivery(
        id=row.id,
        guid=row.guid,
        event=row.event,
        action=row.action,
        repo=row.repo,
        installation_id=row.installation_id,
        body=bytes(row.body),
        received_at=row.received_at,
        status=row.status,
        reason=row.reason,
    )


def count_deliveries(engine: sa.Engine) -> int:
    """How many deliveries are stored."""
    with reading(engine) as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(deliveries)).scalar_one()


def purge_deliveries(engine: sa.Engine, older_than_seconds: float) -> int:
    """Delete deliveries received more than ``older_than_seconds`` ago; returns how many.

    Keep them longer than GitHub may redeliver (days), or a redelivery is processed again.
    """
    cutoff = utcnow() - timedelta(seconds=older_than_seconds)
    with engine.begin() as connection:
        return connection.execute(
            sa.delete(deliveries).where(deliveries.c.received_at < cutoff)
        ).rowcount
