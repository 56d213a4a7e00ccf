"""``repair_deliveries`` jobs: redeliver what prbot lost and re-run PRs reported for an older
head (bot/repair.py). Queued when a worker starts, then every ``PRBOT_REPAIR_INTERVAL``.

The next run is queued before this one works, so a run that fails (GitHub down) is
superseded by the next instead of ending the chain; it then walks from the same point.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.handlers.context import HandlerContext
from bot.handlers.registry import on_job
from bot.metrics import count_repair
from bot.repair import DEDUPE_KEY, JOB_KIND, repair_deliveries, sweep_stale_heads

log = logging.getLogger(__name__)


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
    result.stale = sweep_stale_heads(ctx.engine, ctx.enqueue_pipeline)
    count_repair(result)
    log.info("delivery repair: %s", result.summary())
    if interval > 0:
        schedule_repair(ctx.queue, next_state, interval)  # coalesces: the new state
