"""The repository's own CI moved on a head prbot reported: its smoke steps are redrawn.

Other apps' ``check_run`` (created, completed) and ``check_suite`` (completed) events, their
commit ``status`` events (vLLM's Buildkite posts one per job), and Buildkite's news of builds
prbot did not make (bot/worker/handlers/buildkite.py) queue one ``jobs_refresh`` per head,
coalesced, when the news names a selected smoke step (a status of a step nobody selected
redraws nothing; a check run or suite counts only from an app in ``check_run_apps``): the
kept report's smoke steps are read again from the repository's builds, check runs and
statuses, and the comment and check run are redrawn when they changed.
Nothing is dispatched.

prbot's own check run and suite are never news here: redrawing updates them, and that would
be news again.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.store import jobs as store
from bot.worker.ci.flow import REFRESH_JOB, names_news, queue_refresh, refresh_head, services_for
from bot.worker.handlers.context import HandlerContext, ours
from bot.worker.handlers.registry import Event, on_event, on_job

log = logging.getLogger(__name__)


def _refresh(
    ctx: HandlerContext, payload: dict[str, Any], head_sha: str, name: str, app: str | None = None
) -> None:
    repo = payload["repository"]["full_name"]
    # Only news of a selected smoke step of a reported head redraws anything.
    found = names_news(ctx.engine, repo, head_sha, name=name, app=app)
    if found:
        queue_refresh(ctx.queue, repo, head_sha, found[0][2])


def _foreign(ctx: HandlerContext, app: dict[str, Any] | None) -> bool:
    # An app that does not say who it is counts as prbot's: never redraw on it.
    return isinstance(app, dict) and app.get("id") is not None and not ours(ctx, app)


@on_event("check_run", "created", "completed")
def on_other_check_run(ctx: HandlerContext, event: Event) -> None:
    run = event.payload["check_run"]
    if _foreign(ctx, run.get("app")):
        slug = str(run["app"].get("slug") or "")
        _refresh(ctx, event.payload, run["head_sha"], str(run.get("name")), app=slug)


@on_event("check_suite", "completed")
def on_other_check_suite(ctx: HandlerContext, event: Event) -> None:
    # A suite names no step: a completed suite redraws every reported head of the commit.
    suite = event.payload["check_suite"]
    if not _foreign(ctx, suite.get("app")):
        return
    repo = event.payload["repository"]["full_name"]
    slug = str(suite["app"].get("slug") or "")
    found = names_news(ctx.engine, repo, suite["head_sha"], app=slug)
    if found:
        queue_refresh(ctx.queue, repo, suite["head_sha"], found[0][2])


@on_event("status")
def on_status(ctx: HandlerContext, event: Event) -> None:
    _refresh(ctx, event.payload, event.payload["sha"], str(event.payload.get("context")))


@on_job(REFRESH_JOB)
def run_refresh(ctx: HandlerContext, payload: dict[str, Any]) -> None:
    repo, head_sha = payload["repo"], payload["head_sha"]
    services = services_for(ctx, payload.get("installation_id"))
    for _, number in store.heads_with_report(ctx.engine, head_sha, repo=repo):
        if refresh_head(services, repo, number, head_sha):
            log.info("%s#%s@%s: repository CI redrawn", repo, number, head_sha[:12])
