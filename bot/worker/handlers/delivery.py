"""``delivery`` jobs: one stored webhook, handed to the handlers of its event."""

from __future__ import annotations

import json
import logging
from typing import Any

from bot.runtime.logs import delivery_fields, log_fields
from bot.store import deliveries
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import Event, dispatch_event, on_job

log = logging.getLogger(__name__)


@on_job("delivery")
def handle_delivery(ctx: HandlerContext, job: dict[str, Any]) -> None:
    delivery_id = job["delivery_id"]
    delivery = deliveries.get_delivery(ctx.engine, delivery_id)
    if delivery is None:
        raise LookupError(f"delivery {delivery_id} is missing")
    payload = json.loads(delivery.body)
    event = Event(delivery.event, delivery.action or "", payload, delivery_id)
    with log_fields(**delivery_fields(delivery.repo, payload)):
        log.info("delivery %s: %s %s", delivery.guid, delivery.event, delivery.action or "")
        dispatch_event(ctx, event)
