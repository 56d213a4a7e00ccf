"""``pull_request``: record the head, keep the open-PR index current, queue a run."""

from __future__ import annotations

from bot.github.pulls import parse_time, pull_summary
from bot.store import state
from bot.store.open_prs import apply_pull_request_event, needs_reconcile
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import Event, on_event

# Actions that may change what the checks say. ``closed`` and the label/review actions only
# update the index and the head.
PIPELINE_ACTIONS = {"opened", "synchronize", "reopened", "edited", "ready_for_review"}


@on_event("pull_request")
def on_pull_request(ctx: HandlerContext, event: Event) -> None:
    payload = event.payload
    pull = payload["pull_request"]
    repo = payload["repository"]["full_name"]
    verdict = state.observe_head_verdict(
        ctx.engine,
        repo,
        pull["number"],
        pull["head"]["sha"],
        parse_time(pull.get("updated_at")),
        # A push names the head it moved from: then a same-second time is no tie.
        moved_from=payload.get("before") if event.action == "synchronize" else None,
    )
    # Title, body and state now; the changed files once the pipeline has the diff.
    apply_pull_request_event(ctx.engine, payload, None)
    if needs_reconcile(ctx.engine, repo):
        # Events only know the PRs they saw; list the rest once, before this PR's run.
        ctx.enqueue_reconcile(repo, (payload.get("installation") or {}).get("id"))
    if event.action not in PIPELINE_ACTIONS or pull.get("state") != "open":
        return
    if verdict == "older":
        # A late event (redelivered, or handled after a newer one) for a head a newer push
        # replaced. Queued, it would take the newer head's place in line, and the run would
        # then be skipped as overtaken: the current head left with no report at all.
        return
    summary: dict | None = pull_summary(pull)
    if verdict == "tied" and ctx.client_for(payload) is not None:
        # Two pushes in one second: events cannot say which head is newer, so the run asks
        # GitHub for the PR's head, as a /recheck does.
        summary = None
    ctx.enqueue_pipeline(
        payload, summary, reason=f"pull_request.{event.action}", number=pull["number"]
    )
