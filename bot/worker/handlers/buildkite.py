"""``buildkite`` deliveries (POST /webhooks/buildkite): a build prbot made has news.

The delivery only says that a job or the build finished; the states and artifacts come from
Buildkite's API (bot/worker/ci/results.py), the records are updated, and the report of each head
the build belongs to is re-rendered and republished without running the checks.
"""

from __future__ import annotations

import logging

from bot.engines.base import DISPATCH_META, BuildRef
from bot.events.buildkite import HANDLED_EVENTS
from bot.store import jobs as store
from bot.worker.ci.flow import services_for, take_build_news
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import Event, on_event

log = logging.getLogger(__name__)
ENGINE = "buildkite"


@on_event("buildkite", *sorted(HANDLED_EVENTS))
def on_buildkite(ctx: HandlerContext, event: Event) -> None:
    build = event.payload.get("build") if isinstance(event.payload, dict) else None
    if not isinstance(build, dict) or not isinstance(build.get("id"), str):
        log.warning("buildkite delivery %s without a build id; ignored", event.delivery_id)
        return
    meta = build.get("meta_data") if isinstance(build.get("meta_data"), dict) else {}
    dispatch_key = meta.get(DISPATCH_META) if isinstance(meta.get(DISPATCH_META), str) else None
    records = store.records_for_build(ctx.engine, ENGINE, build["id"])
    if not records and dispatch_key:
        records = store.records_for_dispatch(ctx.engine, dispatch_key)
    if not records:
        return  # not a build prbot made
    first = records[0].key
    kept = store.load_full_report(ctx.engine, first.repo, first.number, first.head_sha)
    installation_id = kept[1].get("installation_id") if kept else None
    number = build.get("number")
    ref = BuildRef(
        ENGINE,
        build["id"],
        number if isinstance(number, int) and not isinstance(number, bool) else None,
        str(build.get("web_url") or ""),
    )
    take_build_news(
        services_for(ctx, installation_id),
        ref,
        dispatch_key,
        finished=event.action == "build.finished",
    )
