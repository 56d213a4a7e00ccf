"""The webhook intake: verify, dedupe, store, answer 202. No GitHub call in the request.

``POST /webhooks/github`` reads the body with a size cap while streaming, checks the
signature against every configured secret, drops events prbot does not handle without
storing them, and records the rest (delivery + queue job, one transaction).
"""

from __future__ import annotations

import functools
import gc
import logging
import threading
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from sqlalchemy import Engine

from bot.config import Settings
from bot.metrics import DELIVERIES, REGISTRY, QueueDepthCollector
from bot.store import db, deliveries
from bot.store.queue import Queue
from bot.webhooks import WebhookError, parse_delivery

log = logging.getLogger(__name__)


class BodyTooLarge(Exception):
    pass


async def read_capped(request: Request, limit: int) -> bytes:
    """The request body, refusing as soon as it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(status: int, event: str, outcome: str, **extra: Any) -> JSONResponse:
    DELIVERIES.labels(event or "unknown", outcome).inc()
    return JSONResponse({"status": outcome, **extra}, status_code=status)


def start_worker_threads(
    worker_factory,
    queue: Queue,
    count: int,  # noqa: ANN001
    stop: threading.Event,
) -> list[threading.Thread]:
    """``count`` workers on daemon threads, each with its own Worker (and git readers)."""
    threads = []
    for index in range(max(count, 1)):
        worker = worker_factory(queue)
        thread = threading.Thread(
            target=worker.run_forever, args=(stop,), name=f"prbot-worker-{index}", daemon=True
        )
        thread.start()
        threads.append(thread)
    return threads


def create_app(settings: Settings, engine: Engine, *, worker_factory=None) -> FastAPI:
    """The ASGI app. ``worker_factory`` (if given) starts ``settings.worker_threads``
    in-process workers."""
    queue = Queue(engine, lease_seconds=settings.lease_seconds, max_attempts=settings.max_attempts)
    collector = QueueDepthCollector(queue.depth)
    in_process_db = engine.dialect.name == "sqlite"

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        try:
            REGISTRY.register(collector)
        except ValueError:  # another app in this process already exports the queue gauges
            pass
        # Startup objects (routes, models, templates) never die; keeping them out of the
        # collector's generations shortens the GC pauses that show up as tail latency.
        gc.freeze()
        stop = threading.Event()
        threads = (
            start_worker_threads(worker_factory, queue, settings.worker_threads, stop)
            if worker_factory is not None
            else []
        )
        try:
            yield
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
            try:
                REGISTRY.unregister(collector)
            except KeyError:
                pass

    app = FastAPI(title="prbot", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.queue = queue

    @app.post("/webhooks/github")
    async def github_webhook(request: Request) -> Response:
        event = request.headers.get("x-github-event", "")
        try:
            body = await read_capped(request, settings.max_body_bytes)
        except BodyTooLarge:
            return _answer(413, event, "too_large", message="body exceeds 25 MiB")
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            delivery = parse_delivery(headers, body, settings.webhook_secrets)
        except WebhookError as exc:
            outcome = {401: "bad_signature", 400: "malformed", 415: "malformed"}.get(
                exc.status, "error"
            )
            return _answer(exc.status, event, outcome, message=str(exc))
        if delivery.event == "ping":
            return _answer(200, event, "pong")
        if not delivery.handled:
            return _answer(200, event, "ignored")
        record = functools.partial(
            deliveries.record_delivery,
            engine,
            guid=delivery.guid,
            event=delivery.event,
            action=delivery.action,
            repo=delivery.repo,
            installation_id=delivery.installation_id,
            body=body,
        )
        # SQLite commits in-process in a fraction of a millisecond, less than a thread hop
        # costs; a networked database goes through a thread so it never stalls the loop.
        stored = record() if in_process_db else await run_in_threadpool(record)
        if not stored:
            return _answer(200, event, "duplicate")
        return _answer(202, event, "accepted")

    @app.get("/healthz")
    def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/readyz")
    def readyz() -> PlainTextResponse:
        if db.ping(engine):
            return PlainTextResponse("ready")
        return PlainTextResponse("database unreachable", status_code=503)

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return app
