"""The webhook intake: verify, validate, store, answer 202. No GitHub call in the request.

``POST /webhooks/github`` streams the body through the HMAC into a spool (bounded in size,
time and bytes in flight across connections), checks the signature against every
configured secret, drops events prbot does not handle without storing them, validates the
fields prbot reads (bot/events/payloads.py) and records the rest: delivery + queue job, in batched
transactions on one writer thread (bot/intake/writer.py), so the event loop never waits on
the database. A signed delivery that does not validate is stored as ``rejected`` with its
reason, answered 400.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import ClientDisconnect

from bot.events.webhooks import (
    HANDLED_ACTIONS,
    SignatureCheck,
    WebhookError,
    check_signature_header,
    delivery_headers,
)
from bot.intake.body import (
    BodySpool,
    BodyTimeout,
    BodyTooLarge,
    InflightBudget,
    IntakeBusy,
    read_signed_body,
)
from bot.intake.buildkite import receive as receive_buildkite
from bot.intake.writer import DeliveryWriter
from bot.runtime.metrics import REGISTRY, QueueDepthCollector, count_delivery, exposition
from bot.runtime.settings import Settings
from bot.store import db
from bot.store.inbox import waiting_in_inbox
from bot.store.queue import Queue

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
# On answers sent before the body was read in full: uvicorn would otherwise keep the
# connection and read (and discard) the rest of an upload nobody wants.
CLOSE = {"Connection": "close"}
# A refused body up to this size is cheaper to read and drop than a new connection.
DRAIN_BYTES = 64 * 1024


# The route reads the raw body (the signature is over its bytes), so FastAPI cannot infer
# what it takes; this says it, for clients and for the fuzz run over /openapi.json.
GITHUB_WEBHOOK_OPENAPI: dict[str, Any] = {
    "parameters": [
        {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
        for name in ("X-Hub-Signature-256", "X-GitHub-Event", "X-GitHub-Delivery")
    ],
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string"},
                        "installation": {
                            "type": "object",
                            "properties": {"id": {"type": "integer"}},
                        },
                        "repository": {
                            "type": "object",
                            "properties": {"full_name": {"type": "string"}},
                        },
                    },
                }
            }
        },
    },
    "responses": {
        "202": {"description": "stored and queued"},
        "200": {"description": "ping, a duplicate, or an event prbot does not handle"},
        "400": {"description": "signed, but a payload prbot cannot use (stored as rejected)"},
        "401": {"description": "missing or wrong signature"},
        "413": {"description": "body over PRBOT's limit"},
        "503": {"description": "busy or storage unavailable; retry later"},
    },
}


def _close_unless_small(request: Request) -> dict[str, str]:
    declared = request.headers.get("content-length", "")
    return {} if declared.isdigit() and int(declared) <= DRAIN_BYTES else CLOSE


def _answer(
    status: int,
    event: str | None,
    outcome: str,
    *,
    verified: bool,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    count_delivery(event, outcome, verified=verified)
    return JSONResponse({"status": outcome, **extra}, status_code=status, headers=headers)


class IntakeApp(FastAPI):
    """FastAPI, with ``POST /webhooks/github`` handed straight to its handler.

    The route stays declared (its OpenAPI description is what clients and the fuzz run
    read), but per request FastAPI's middleware stack (error, telemetry and body-limit
    wrappers around every ``send``) and its router (dependencies, endpoint wrapping) cost the
    intake about a fifth of its CPU under a burst (docs/benchmarks/intake.md). So the one hot
    route skips them, and answers its own errors as Starlette's error middleware would.
    """

    webhook_path = "/webhooks/github"
    webhook_handler: Any = None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if (
            self.webhook_handler is not None
            and scope["type"] == "http"
            and scope["path"] == self.webhook_path
            and scope["method"] == "POST"
        ):
            try:
                response = await self.webhook_handler(Request(scope, receive, send))
            except Exception:  # noqa: BLE001 - a bug is one 500 and a log line, as elsewhere
                log.exception("webhook intake failed")
                response = PlainTextResponse("Internal Server Error", status_code=500)
            await response(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings,
    engine: Engine,
    *,
    start_workers: Callable[[Queue, threading.Event], list[threading.Thread]] | None = None,
) -> IntakeApp:
    """The ASGI app. ``start_workers`` (if given) starts in-process worker threads on the
    app's queue, stopped by the event at shutdown (the demo and tests; ``prbot serve`` runs
    worker processes). The composition root (bot/service.py) hands it in, so the intake
    never imports the worker."""
    queue = Queue(engine, lease_seconds=settings.lease_seconds, max_attempts=settings.max_attempts)
    collector = QueueDepthCollector(
        queue.depth,
        inbox=(lambda: waiting_in_inbox(engine)) if engine.dialect.name == "sqlite" else None,
    )
    budget = InflightBudget(settings.max_inflight_bytes)
    writer = DeliveryWriter(engine)
    spool_dir = settings.data_dir / "intake"

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        try:
            REGISTRY.register(collector)
        except ValueError:  # another app in this process already exports the queue gauges
            pass
        # Startup objects (routes, models, templates) never die; keeping them out of the
        # collector's generations shortens the GC pauses that show up as tail latency.
        gc.freeze()
        writer.start()
        stop = threading.Event()
        threads = []
        if start_workers is not None:
            threads = start_workers(queue, stop)
        try:
            yield
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
            writer.stop()
            try:
                REGISTRY.unregister(collector)
            except KeyError:
                pass

    app = IntakeApp(title="prbot", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.queue = queue
    app.state.inflight = budget
    app.state.settings = settings

    @app.post("/webhooks/github", openapi_extra=GITHUB_WEBHOOK_OPENAPI)
    async def github_webhook(request: Request) -> Response:
        # Nothing from the headers is trusted (or becomes a metric label) before the
        # signature over the whole body has checked.
        try:
            signature = check_signature_header(request.headers.get("x-hub-signature-256"))
            check = SignatureCheck(settings.webhook_secrets)
        except WebhookError as exc:
            outcome = "bad_signature" if exc.status == 401 else "error"
            return _answer(
                exc.status,
                None,
                outcome,
                verified=False,
                headers=_close_unless_small(request),
                message=str(exc),
            )
        spool = BodySpool(spool_dir)
        claimed = 0
        try:
            try:
                claimed = await read_signed_body(
                    request,
                    check,
                    spool,
                    budget,
                    limit=settings.max_body_bytes,
                    timeout=settings.body_timeout,
                )
            except BodyTooLarge:
                limit_mib = settings.max_body_bytes // (1024 * 1024)
                return _answer(
                    413,
                    None,
                    "too_large",
                    verified=False,
                    headers=CLOSE,
                    message=f"body exceeds {limit_mib} MiB",
                )
            except IntakeBusy:
                return _answer(
                    503,
                    None,
                    "busy",
                    verified=False,
                    headers={"Retry-After": str(RETRY_AFTER_SECONDS), **CLOSE},
                    message="too many request bytes in flight; retry later",
                )
            except ClientDisconnect:
                # Gone before the body was in; nobody reads the answer.
                count_delivery(None, "disconnected", verified=False)
                return Response(status_code=400)
            except BodyTimeout:
                return _answer(
                    408,
                    None,
                    "timeout",
                    verified=False,
                    headers=CLOSE,
                    message=f"body not received within {settings.body_timeout:g}s",
                )
            try:
                check.verify(signature)
            except WebhookError as exc:
                return _answer(401, None, "bad_signature", verified=False, message=str(exc))
            headers = {k.lower(): v for k, v in request.headers.items()}
            try:
                event, _guid = delivery_headers(headers)
            except WebhookError as exc:
                return _answer(exc.status, None, "malformed", verified=True, message=str(exc))
            if event == "ping":
                return _answer(200, event, "pong", verified=True)
            if event not in HANDLED_ACTIONS:
                return _answer(200, event, "ignored", verified=True)
            body = await spool.read()
        finally:
            spool.close()
            budget.release(claimed)
        try:
            stored = await writer.store(headers, body)
        except WebhookError as exc:  # 415: a content type GitHub never sends
            return _answer(exc.status, event, "malformed", verified=True, message=str(exc))
        except SQLAlchemyError as exc:
            log.error("could not store delivery: %s", exc)
            return _answer(
                503,
                event,
                "error",
                verified=True,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
                message="storage unavailable; redeliver later",
            )
        extra = {"message": stored.message} if stored.message else {}
        return _answer(stored.status, event, stored.outcome, verified=True, **extra)

    app.webhook_handler = github_webhook

    @app.post("/webhooks/buildkite")
    async def buildkite_webhook(request: Request) -> Response:
        # Results of the GPU jobs prbot dispatched (bot/intake/buildkite.py).
        return await receive_buildkite(request, settings.ci, engine)

    @app.get("/healthz")
    async def healthz() -> PlainTextResponse:
        # On the loop itself (no thread hop): it answers exactly when the loop is free.
        return PlainTextResponse("ok")

    @app.get("/readyz")
    def readyz() -> PlainTextResponse:
        if db.ping(engine):
            return PlainTextResponse("ready")
        return PlainTextResponse("database unreachable", status_code=503)

    @app.get("/metrics")
    def metrics() -> Response:
        body, content_type = exposition()
        return Response(body, media_type=content_type)

    return app
