"""``workflow_run``: a GitHub Actions run prbot dispatched has news (bot/engines/actions.py).

A run is matched back to its job records by its id (GitHub named it when the dispatch was
made), else by the dispatch key in its name (``run-name: prbot <key>``; older servers return
no run), else by its head SHA among the records still running on that commit: a fork PR's run
has no ``pull_requests`` to go by.
"""

from __future__ import annotations

import logging

from bot.engines.actions import dispatch_key_in
from bot.engines.base import BuildRef
from bot.store import jobs as store
from bot.worker.ci.flow import services_for, take_build_news
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import Event, on_event

log = logging.getLogger(__name__)
ENGINE = "actions"


@on_event("workflow_run", "completed", "in_progress")
def on_workflow_run(ctx: HandlerContext, event: Event) -> None:
    run = event.payload.get("workflow_run") or {}
    repo = (event.payload.get("repository") or {}).get("full_name")
    if not isinstance(run.get("id"), int) or not isinstance(repo, str):
        return
    build_id = f"{repo}:{run['id']}"
    key = dispatch_key_in(run.get("display_title") or run.get("name"))
    known = store.records_for_build(ctx.engine, ENGINE, build_id)
    if not known and key is None:
        head = run.get("head_sha")
        matching = store.active_for_commit(ctx.engine, ENGINE, head) if head else []
        keys = {r.dispatch_key for r in matching if r.key.repo == repo and r.dispatch_key}
        if len(keys) != 1:
            return  # not prbot's run, or too many candidates to tell
        key = keys.pop()
    if not known and key is None:
        return
    number = run.get("run_number")
    ref = BuildRef(
        ENGINE,
        build_id,
        number if isinstance(number, int) and not isinstance(number, bool) else None,
        str(run.get("html_url") or ""),
    )
    take_build_news(
        services_for(ctx, (event.payload.get("installation") or {}).get("id")),
        ref,
        key,
        finished=event.action == "completed",
    )
