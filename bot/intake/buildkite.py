"""``POST /webhooks/buildkite``: verify, deduplicate and store a Buildkite delivery, 202.

As GitHub's: nothing is stored before the token or signature over the whole (bounded) body
checks, a stale signature timestamp is refused, and the delivery goes into the same table
and queue as GitHub's, as event ``buildkite`` with the ``X-Buildkite-Event`` as its action.
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

from bot.events.buildkite import BuildkiteWebhookError, parse_event, verify
from bot.runtime.settings import CiSettings
from bot.store.deliveries import record_delivery

log = logging.getLogger(__name__)

EVENT_NAME = "buildkite"
# A job.finished or build.finished body is a few kilobytes (a build with its jobs list).
MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_GUID_CHARS = 100


def delivery_guid(dedupe_key: str) -> str:
    if len(dedupe_key) <= MAX_GUID_CHARS:
        return dedupe_key
    return "buildkite:" + hashlib.sha256(dedupe_key.encode()).hexdigest()


async def _bounded_body(request: Request) -> bytes | None:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def receive(request: Request, settings: CiSettings, engine: Engine) -> JSONResponse:
    try:
        body = await _bounded_body(request)
    except ClientDisconnect:
        return JSONResponse({"status": "disconnected"}, status_code=400)
    if body is None:
        return JSONResponse(
            {"status": "too_large", "message": f"body exceeds {MAX_BODY_BYTES} bytes"},
            status_code=413,
            headers={"Connection": "close"},
        )
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
