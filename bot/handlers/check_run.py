"""``check_run``: GitHub's *Re-run* on prbot's check run, and the buttons prbot put on it.

``rerequested`` runs the pipeline again for the run's head, but only while that commit is
still the PR's head: re-running an old commit's check would publish nothing (the report of a
newer head is never overwritten) and only cost a run. ``requested_action`` is the
"Apply fix" button (bot/handlers/fix.py).
"""

from __future__ import annotations

import logging
from typing import Any

from bot.github_app import CHECK_RUN_NAME
from bot.handlers.context import HandlerContext
from bot.handlers.registry import Event, on_event
from bot.store import state

log = logging.getLogger(__name__)

# A commit is the head of a handful of PRs at most; more is not worth a run each.
MAX_PULLS_PER_RERUN = 10


def ours(ctx: HandlerContext, app: dict[str, Any] | None) -> bool:
    """Whether a run or suite belongs to this App (other Apps' events are not ours to act on)."""
    app_id = (app or {}).get("id")
    return app_id is None or ctx.settings.app_id is None or str(app_id) == ctx.settings.app_id


def pulls_for_head(
    ctx: HandlerContext, repo: str, head_sha: str, pull_refs: list[dict[str, Any]]
) -> list[int]:
    """The PRs whose head is ``head_sha``: those the payload names, else (a fork's PR, which
    GitHub leaves out) those whose head prbot last saw there."""
    numbers = [p["number"] for p in pull_refs if (p.get("head") or {}).get("sha") == head_sha]
    if not numbers:
        numbers = state.pulls_at_head(ctx.engine, repo, head_sha)
    return list(dict.fromkeys(numbers))[:MAX_PULLS_PER_RERUN]


def still_head(ctx: HandlerContext, payload: dict[str, Any], number: int, head_sha: str) -> bool:
    """Whether ``head_sha`` is still PR ``number``'s head (asked of GitHub when it can be)."""
    repo = payload["repository"]["full_name"]
    known = state.current_head(ctx.engine, repo, number)
    if known is not None and known != head_sha:
        return False
    client = ctx.client_for(payload)
    if client is None:
        return known == head_sha
    pull = client.get_pull(repo, number)
    return pull.state == "open" and pull.head_sha == head_sha


def rerun_head(
    ctx: HandlerContext,
    payload: dict[str, Any],
    head_sha: str,
    pull_refs: list[dict[str, Any]],
    reason: str,
) -> list[int]:
    """Queue the pipeline for every PR still at ``head_sha``; returns their numbers."""
    repo = payload["repository"]["full_name"]
    queued = []
    for number in pulls_for_head(ctx, repo, head_sha, pull_refs):
        if not still_head(ctx, payload, number, head_sha):
            log.info("%s#%s: %s is no longer the head; not re-run", repo, number, head_sha[:12])
            continue
        ctx.enqueue_pipeline(payload, None, number=number, reason=reason)
        queued.append(number)
    if not queued:
        log.info("%s@%s: re-run asked, but no open PR has it as head", repo, head_sha[:12])
    return queued


@on_event("check_run", "rerequested")
def on_check_run_rerequested(ctx: HandlerContext, event: Event) -> None:
    run = event.payload["check_run"]
    if run.get("name") != CHECK_RUN_NAME or not ours(ctx, run.get("app")):
        return
    rerun_head(
        ctx, event.payload, run["head_sha"], run.get("pull_requests") or [], "check_run.rerequested"
    )
