"""The webhook intake's app: verify, validate, store, answer 202. No GitHub call in the request.

The routes: ``POST /webhooks/github`` (bot/intake/github.py: the body streamed through the
HMAC into a bounded spool, then validated and stored by one writer thread,
bot/intake/writer.py, so the event loop never waits on the database), ``POST
/webhooks/buildkite`` (bot/intake/buildkite.py), and the health, readiness and metrics
endpoints.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from sqlalchemy import Engine

from bot.intake.body import (
    InflightBudget,
)
from bot.intake.buildkite import receive as receive_buildkite
from bot.intake.github import GITHUB_WEBHOOK_OPENAPI, GitHubIntake
from bot.intake.writer import DeliveryWriter
from bot.runtime.metrics import REGISTRY, QueueDepthCollector, exposition
from bot.runtime.settings import Settings
from bot.store import db
from bot.store.inbox import waiting_in_inbox
from bot.store.queue import Queue

log = logging.getLogger(__name__)


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

    intake = GitHubIntake(settings, writer, budget, spool_dir)

    @app.post("/webhooks/github", openapi_extra=GITHUB_WEBHOOK_OPENAPI)
    async def github_webhook(request: Request) -> Response:
        return await intake.receive(request)

    app.webhook_handler = intake.receive

    @app.post("/webhooks/buildkite")
    async def buildkite_webhook(request: Request) -> Response:
        # Results of the GPU jobs prbot dispatched (bot/intake/buildkite.py).
        return await receive_buildkite(
            request, settings.ci, engine, budget=budget, body_timeout=settings.body_timeout
        )

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
