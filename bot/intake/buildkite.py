"""``POST /webhooks/buildkite``: verify, deduplicate and store a Buildkite delivery, 202.

As GitHub's: the body is read under the same deadline and bytes-in-flight budget (408, 503),
nothing is stored before the token or signature over the whole (bounded) body checks, a
stale signature timestamp is refused, and the delivery goes into the same table and queue as
GitHub's, as event ``buildkite`` with the ``X-Buildkite-Event`` as its action.
Buildkite sends no delivery id, so the id is the event, the job (or build) and its state:
a redelivery of the same news is answered 200 and changes nothing.
"""

from __future__ import annotations

import hashlib
import logging

from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from bot.events.buildkite import (
    BuildkiteWebhookError,
    check_token_delivery_age,
    parse_event,
    verify,
)
from bot.intake.body import (
    BodySpool,
    BodyTimeout,
    BodyTooLarge,
    InflightBudget,
    IntakeBusy,
    NoDigest,
    read_signed_body,
)
from bot.runtime.settings import CiSettings
from bot.store.deliveries import record_delivery

log = logging.getLogger(__name__)

EVENT_NAME = "buildkite"
# A job.finished or build.finished body is a few kilobytes (a build with its jobs list).
MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_GUID_CHARS = 100
RETRY_AFTER_SECONDS = 5
CLOSE = {"Connection": "close"}


def delivery_guid(dedupe_key: str) -> str:
    if len(dedupe_key) <= MAX_GUID_CHARS:
        return dedupe_key
    return "buildkite:" + hashlib.sha256(dedupe_key.encode()).hexdigest()


async def _read_body(
    request: Request, budget: InflightBudget, timeout: float
) -> JSONResponse | bytes:
    """The whole body, read as GitHub's is (bot/intake/body.py): within the body deadline
    (408), under the process's bytes-in-flight budget (503), at most ``MAX_BODY_BYTES``
    (413); or the answer that refuses it. Buildkite's proof covers the whole body, so it is
    checked once the body is in."""
    spool = BodySpool(None)
    claimed = 0
    try:
        try:
            claimed = await read_signed_body(
                request, NoDigest(), spool, budget, limit=MAX_BODY_BYTES, timeout=timeout
            )
        except BodyTooLarge:
            return JSONResponse(
                {"status": "too_large", "message": f"body exceeds {MAX_BODY_BYTES} bytes"},
                status_code=413,
                headers=CLOSE,
            )
        except IntakeBusy:
            return JSONResponse(
                {"status": "busy", "message": "too many request bytes in flight; retry later"},
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS), **CLOSE},
            )
        except BodyTimeout:
            return JSONResponse(
                {"status": "timeout", "message": f"body not received within {timeout:g}s"},
                status_code=408,
                headers=CLOSE,
            )
        except ClientDisconnect:
            return JSONResponse({"status": "disconnected"}, status_code=400)
        return await spool.read()
    finally:
        spool.close()
        budget.release(claimed)


async def receive(
    request: Request,
    settings: CiSettings,
    engine: Engine,
    *,
    budget: InflightBudget,
    body_timeout: float,
) -> JSONResponse:
    if not settings.buildkite_webhook_tokens:  # nothing could prove it: no need to read it
        return JSONResponse(
            {"status": "bad_signature", "message": "no Buildkite webhook token is configured"},
            status_code=401,
            headers=CLOSE,
        )
    body = await _read_body(request, budget, body_timeout)
    if isinstance(body, JSONResponse):
        return body
    headers = dict(request.headers)
    try:
        verify(
            headers,
            body,
            settings.buildkite_webhook_tokens,
            max_age=settings.buildkite_webhook_max_age,
        )
    except BuildkiteWebhookError as exc:
        return JSONResponse({"status": "bad_signature", "message": str(exc)}, status_code=401)
    try:
        event = parse_event(headers, body)
    except BuildkiteWebhookError as exc:
        return JSONResponse({"status": "malformed", "message": str(exc)}, status_code=exc.status)
    if event is None:
        return JSONResponse({"status": "ignored"}, status_code=200)
    if "x-buildkite-signature" not in headers:
        try:
            check_token_delivery_age(event, max_age=settings.buildkite_webhook_max_age)
        except BuildkiteWebhookError as exc:
            return JSONResponse({"status": "stale", "message": str(exc)}, status_code=401)
    try:
        stored = await run_in_threadpool(
            record_delivery,
            engine,
            guid=delivery_guid(event.dedupe_key),
            event=EVENT_NAME,
            action=event.event,
            repo=None,
            installation_id=None,
            body=body,
        )
    except SQLAlchemyError as exc:
        log.error("could not store a Buildkite delivery: %s", exc.__class__.__name__)
        return JSONResponse(
            {"status": "error", "message": "storage unavailable; redeliver later"},
            status_code=503,
            headers={"Retry-After": "5"},
        )
    if not stored:
        return JSONResponse({"status": "duplicate"}, status_code=200)
    return JSONResponse({"status": "stored"}, status_code=202)
