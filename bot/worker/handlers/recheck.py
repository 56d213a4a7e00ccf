"""``/recheck [reason]``: run the checks again on the PR's current head."""

from __future__ import annotations

from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import CommandCall, on_command


@on_command("recheck")
def recheck(ctx: HandlerContext, call: CommandCall) -> None:
    if call.client is not None and not ctx.dry_run:
        call.client.add_reaction(call.repo, call.comment["id"], "eyes")
    ctx.enqueue_pipeline(
        call.payload,
        None,
        number=call.number,
        comment_id=call.comment.get("id"),
        reason=f"/recheck {call.argument}".strip(),
    )
