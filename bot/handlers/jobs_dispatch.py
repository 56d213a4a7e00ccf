"""``jobs_dispatch`` jobs: plan and dispatch a PR head's GPU jobs, then republish the report.

Queued by the pipeline after a report (bot/pipeline.py), by an approval (approve.py) and by
``/recheck`` through the pipeline. An engine that could not be reached raises, so the worker
retries with backoff; the claims recorded before the engine call keep the retry from
creating a second build.
"""

from __future__ import annotations

from typing import Any

from bot.handlers.context import HandlerContext
from bot.handlers.registry import on_job
from bot.jobs.flow import DISPATCH_JOB, Services, dispatch_head, engines_from_settings


def services_for(ctx: HandlerContext, installation_id: Any) -> Services:
    client = ctx.client(installation_id)
    return Services(
        ctx.engine,
        ctx.settings,
        client,
        ctx.app.bot_login() if ctx.app is not None and client is not None else None,
        engines_from_settings(ctx.settings, client),
    )


@on_job(DISPATCH_JOB)
def run_dispatch(ctx: HandlerContext, job: dict[str, Any]) -> None:
    services = services_for(ctx, job.get("installation_id"))
    dispatch_head(services, job["repo"], int(job["number"]), job["head_sha"], job["mode"])
