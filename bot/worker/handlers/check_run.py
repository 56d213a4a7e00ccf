"""``check_run``: GitHub's *Re-run* on prbot's check run, and the buttons prbot put on it.

``rerequested`` runs the pipeline again for the run's head, but only while that commit is
still the PR's head: re-running an old commit's check would publish nothing (the report of a
newer head is never overwritten) and only cost a run. ``requested_action`` is the
"Apply fix" button (bot/worker/handlers/fix.py).
"""

from __future__ import annotations

import logging

from bot.github.app import CHECK_RUN_NAME
from bot.worker.handlers.context import HandlerContext, ours, rerun_head
from bot.worker.handlers.registry import Event, on_event

log = logging.getLogger(__name__)


@on_event("check_run", "rerequested")
def on_check_run_rerequested(ctx: HandlerContext, event: Event) -> None:
    run = event.payload["check_run"]
    if run.get("name") != CHECK_RUN_NAME or not ours(ctx, run.get("app")):
        return
    rerun_head(
        ctx, event.payload, run["head_sha"], run.get("pull_requests") or [], "check_run.rerequested"
    )
