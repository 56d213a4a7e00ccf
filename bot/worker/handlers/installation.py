"""``installation`` and ``installation_repositories``: who installed prbot where."""

from __future__ import annotations

import logging

from bot.store import state
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import Event, on_event

log = logging.getLogger(__name__)

# Actions after which the repositories are (again) ours to index.
INDEXING_ACTIONS = {"created", "added", "unsuspend"}


@on_event("installation")
@on_event("installation_repositories")
def on_installation(ctx: HandlerContext, event: Event) -> None:
    installation = event.payload.get("installation") or {}
    if not isinstance(installation.get("id"), int):
        log.warning("installation event without an installation id; ignored")
        return
    repos = [
        r.get("full_name")
        for r in event.payload.get("repositories") or event.payload.get("repositories_added") or []
        if r.get("full_name")
    ]
    state.record_installation(
        ctx.engine,
        installation["id"],
        ((installation.get("account") or {}).get("login") or ""),
        repos or None,
        deleted=event.action == "deleted",
    )
    if event.action == "new_permissions_accepted" and ctx.app is not None:
        ctx.app.forget_permissions(installation["id"])  # the next report reads them again
    if event.action in INDEXING_ACTIONS:
        for repo in repos:
            ctx.enqueue_reconcile(repo, installation["id"])
