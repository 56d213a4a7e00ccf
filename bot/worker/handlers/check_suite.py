"""``check_suite.rerequested``: GitHub's *Re-run all checks*, for prbot's suite on a head."""

from __future__ import annotations

from bot.worker.handlers.context import HandlerContext, ours, rerun_head
from bot.worker.handlers.registry import Event, on_event


@on_event("check_suite", "rerequested")
def on_check_suite_rerequested(ctx: HandlerContext, event: Event) -> None:
    suite = event.payload["check_suite"]
    if not ours(ctx, suite.get("app")):
        return
    rerun_head(
        ctx,
        event.payload,
        suite["head_sha"],
        suite.get("pull_requests") or [],
        "check_suite.rerequested",
    )
