"""``jobs_dispatch`` jobs: plan and dispatch a PR head's GPU jobs, then republish the report.

Queued by the pipeline after a report (bot/worker/handlers/pipeline.py), by an approval
(approve.py) and by
``/recheck`` through the pipeline. An engine that could not be reached raises, so the worker
retries with backoff; the claims recorded before the engine call keep the retry from
creating a second build.
"""

from __future__ import annotations

from typing import Any

from bot.worker.ci.flow import DISPATCH_JOB, dispatch_head, services_for
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import on_job


@on_job(DISPATCH_JOB)
def run_dispatch(ctx: HandlerContext, job: dict[str, Any]) -> None:
    services = services_for(ctx, job.get("installation_id"))
    dispatch_head(services, job["repo"], int(job["number"]), job["head_sha"], job["mode"])
