"""``reconcile`` jobs: list a repository's open PRs into the duplicates index.

Queued on installation, the first time a repository is seen, and every few hours after, so
PRs whose events were missed (downtime, lost deliveries) are still found.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.repair.reconcile import reconcile
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import on_job

log = logging.getLogger(__name__)

RECONCILE_INTERVAL = 6 * 3600.0


@on_job("reconcile")
def reconcile_open_prs(ctx: HandlerContext, job: dict[str, Any]) -> None:
    """List the repository's open PRs (a conditional request: 304 when nothing moved) and
    fetch what the index lacks; then come back later to catch missed events."""
    client = ctx.client(job.get("installation_id"))
    if client is None:
        return
    stats = reconcile(ctx.engine, client, job["repo"])
    log.info("reconciled %s: %s", job["repo"], stats)
    ctx.enqueue_reconcile(job["repo"], job["installation_id"], RECONCILE_INTERVAL)
