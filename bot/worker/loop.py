"""The queue consumer's loop: lease a job, keep its lease alive, hand it to its handler,
then complete it or fail it (the queue retries with backoff, then dead-letters).

What a job *does* is in bot/worker/handlers/ (``delivery``, ``pipeline``, ``reconcile``, ...), one
module per event or job kind; this loop knows none of them (docs/architecture.md).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
from datetime import UTC, datetime

from sqlalchemy import Engine

from bot.github.app import GitHubApp
from bot.runtime.logs import job_fields, log_fields
from bot.runtime.metrics import JOB_LATENCY
from bot.runtime.settings import Settings
from bot.store import deliveries
from bot.store.queue import Job, Queue
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import load_handlers, run_job

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL = 3600.0
DONE_JOB_RETENTION = 7 * 86400.0
# GitHub lets a delivery be redelivered for a few days; remembering GUIDs longer keeps
# a late redelivery from being processed twice.
DELIVERY_RETENTION = 30 * 86400.0


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


class Worker:
    def __init__(
        self, settings: Settings, engine: Engine, queue: Queue, app: GitHubApp | None
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.queue = queue
        self.app = app
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
        self.ctx = HandlerContext(settings, engine, queue, app)
        load_handlers()

    # ---------------------------------------------------------------- loop
    def run_forever(self, stop: threading.Event) -> None:
        next_housekeeping = 0.0
        while not stop.is_set():
            if time.monotonic() >= next_housekeeping:
                self.housekeeping()
                next_housekeeping = time.monotonic() + HOUSEKEEPING_INTERVAL
            try:
                worked = self.run_once()
            except Exception:  # noqa: BLE001 - the loop must survive anything
                log.exception("worker loop error")
                worked = False
            if not worked:
                stop.wait(self.settings.poll_seconds)

    def housekeeping(self) -> None:
        """Drop finished jobs and old deliveries; keep deliveries past GitHub's redelivery."""
        try:
            self.queue.purge_done(DONE_JOB_RETENTION)
            deliveries.purge_deliveries(self.engine, DELIVERY_RETENTION)
        except Exception:  # noqa: BLE001 - housekeeping must never stop the worker
            log.exception("housekeeping failed")

    def run_once(self) -> bool:
        job = self.queue.lease(self.worker_id)
        if job is None:
            return False
        started = time.monotonic()
        stop_heartbeat = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job, stop_heartbeat), daemon=True)
        beat.start()
        fields = job_fields(job.id, job.kind, job.payload)
        try:
            with log_fields(**fields) as learned:
                fields = learned  # the same dict: what the job learns (its head) is added
                self.handle(job)
        except Exception as exc:  # noqa: BLE001 - recorded on the job, retried with backoff
            stop_heartbeat.set()
            outcome = self.queue.fail(job, f"{type(exc).__name__}: {exc}")
            log.error(
                "job %s (%s) failed, %s:\n%s",
                job.id,
                job.kind,
                outcome,
                traceback.format_exc(),
                extra=fields,
            )
            JOB_LATENCY.labels(job.kind, outcome).observe(self._age(job))
        else:
            stop_heartbeat.set()
            self.queue.complete(job)
            JOB_LATENCY.labels(job.kind, "done").observe(self._age(job))
            log.info(
                "job %s (%s) done in %.2fs",
                job.id,
                job.kind,
                time.monotonic() - started,
                extra=fields,
            )
        return True

    @staticmethod
    def _age(job: Job) -> float:
        created = job.created_at if job.created_at.tzinfo else job.created_at.replace(tzinfo=UTC)
        return max((datetime.now(UTC) - created).total_seconds(), 0.0)

    def _heartbeat(self, job: Job, stop: threading.Event) -> None:
        interval = max(self.settings.lease_seconds / 3, 0.2)
        while not stop.wait(interval):
            if not self.queue.heartbeat(job):
                return

    # ---------------------------------------------------------------- dispatch
    def handle(self, job: Job) -> None:
        run_job(self.ctx, job.kind, job.payload)
