"""Wiring for the long-running processes: settings -> database, GitHub App, worker, app."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI
from sqlalchemy import Engine

from bot.github.app import GitHubApp
from bot.intake.httpserver import uvicorn_config
from bot.intake.server import create_app
from bot.runtime.settings import ConfigError, Settings
from bot.store import db
from bot.store.queue import Queue
from bot.worker.loop import Worker, start_worker_threads

log = logging.getLogger(__name__)


@dataclass
class Service:
    settings: Settings
    engine: Engine
    app: GitHubApp | None

    @classmethod
    def from_settings(cls, settings: Settings, *, github: bool = True) -> Service:
        """The service's parts. ``github=False`` for intake only: it never calls GitHub, so
        it needs no App key (the key then lives only where workers run)."""
        engine = db.make_engine(settings.database_url or db.default_database_url())
        db.migrate(engine)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        app = None
        wanted = settings.app_id or settings.private_key_path or not settings.dry_run
        if github and wanted:
            # Dry-run may still read public repositories without App credentials.
            app = GitHubApp(settings)
        return cls(settings, engine, app)

    def queue(self) -> Queue:
        return Queue(
            self.engine,
            lease_seconds=self.settings.lease_seconds,
            max_attempts=self.settings.max_attempts,
        )

    def worker(self, queue: Queue | None = None) -> Worker:
        return Worker(self.settings, self.engine, queue or self.queue(), self.app)

    def asgi_app(self, *, with_worker: bool = True) -> FastAPI:
        if not self.settings.webhook_secrets:
            raise ConfigError("PRBOT_WEBHOOK_SECRET is not set")

        def start_workers(queue: Queue, stop: threading.Event) -> list[threading.Thread]:
            return start_worker_threads(self.worker, queue, self.settings.worker_threads, stop)

        return create_app(
            self.settings, self.engine, start_workers=start_workers if with_worker else None
        )


class ThreadedServer:
    """uvicorn on a background thread (demo, tests, benchmarks); ``url`` once started."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        settings = getattr(app.state, "settings", None) or Settings()
        self.config = uvicorn_config(
            app,
            settings,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            access_log=False,
        )
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)
        self.url = ""

    def start(self, timeout: float = 15.0) -> ThreadedServer:
        self.thread.start()
        stop = threading.Event()
        while not self.server.started and self.thread.is_alive() and not stop.wait(0.02):
            timeout -= 0.02
            if timeout <= 0:
                raise RuntimeError("server did not start")
        if not self.server.started:
            raise RuntimeError("server failed to start")
        sock = self.server.servers[0].sockets[0]
        host, port = sock.getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
