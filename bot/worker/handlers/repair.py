"""``repair_deliveries`` jobs: redeliver what prbot lost and re-run open PRs whose current head
has no report, boundedly, then publish that the run failed (bot/repair/redeliver.py). Queued when a
worker starts, then every ``PRBOT_REPAIR_INTERVAL``.

The next run is queued before this one works, so a run that fails (GitHub down) is
superseded by the next instead of ending the chain; it then walks from the same point.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from bot.github.publish import Publisher
from bot.repair.redeliver import (
    DEDUPE_KEY,
    JOB_KIND,
    FailurePublisher,
    repair_deliveries,
    sweep_heads,
)
from bot.report.render import Report
from bot.runtime.metrics import count_repair
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import on_job

log = logging.getLogger(__name__)

# Seconds between a head's sweeps when periodic repair is off (one run at a worker's start).
DEFAULT_SWEEP_SPACING = 600.0


def schedule_repair(ctx_queue: Any, state: dict[str, Any], delay_seconds: float) -> None:
    ctx_queue.enqueue(
        JOB_KIND, {"state": state}, dedupe_key=DEDUPE_KEY, delay_seconds=delay_seconds
    )


@on_job(JOB_KIND)
def repair(ctx: HandlerContext, job: dict[str, Any]) -> None:
    if ctx.app is None:
        return  # no App credentials (dry run): nothing to list
    state = job.get("state") if isinstance(job.get("state"), dict) else {}
    interval = ctx.settings.repair_interval
    if interval > 0:
        schedule_repair(ctx.queue, state, interval)
    result, next_state = repair_deliveries(ctx.engine, ctx.app, state)
    # A head's sweeps are spaced by the repair interval, doubling (bot/repair/head_sweeps.py).
    spacing = timedelta(seconds=interval if interval > 0 else DEFAULT_SWEEP_SPACING)
    result.sweep = sweep_heads(
        ctx.engine, ctx.enqueue_pipeline, failure_publisher(ctx), spacing=spacing
    )
    count_repair(result)
    log.info("delivery repair: %s", result.summary())
    if interval > 0:
        schedule_repair(ctx.queue, next_state, interval)  # coalesces: the new state


def failure_publisher(ctx: HandlerContext) -> FailurePublisher | None:
    """How the repair posts "the run failed" on a PR: the pipeline's sticky comment and check
    run, through the same publisher, for the head GitHub shows; False when it is not that
    head. None in a dry run: the report is only stored."""
    if ctx.settings.dry_run or ctx.app is None:
        return None
    app = ctx.app

    def publish(payload: dict[str, Any], report: Report, markdown: str) -> bool:
        client = ctx.client_for(payload)
        if client is None or report.pr is None:
            return False
        # The open-PR index may hold a head GitHub has moved on from (two pushes in one
        # second order alike): only the head GitHub shows now is told its run failed, so a
        # good report of the real head is never replaced by a failure of another.
        pull = client.get_pull(report.repo, report.pr)
        if pull.state != "open" or pull.head_sha != report.head_sha:
            return False
        locks = ctx.settings.data_dir / "locks"
        publisher = Publisher(ctx.engine, client, app.bot_login(), locks)
        return publisher.publish(report.repo, report.pr, report, markdown).published

    return publish
