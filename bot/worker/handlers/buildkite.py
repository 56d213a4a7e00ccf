"""``buildkite`` deliveries (POST /webhooks/buildkite): a build prbot made has news.

The delivery only says that a job or the build finished; the states and artifacts come from
Buildkite's API (bot/worker/ci/results.py), the records are updated, and the report of each
head the build belongs to is re-rendered and republished without running the checks.

The build is matched by the id Buildkite returned when prbot created it. Its meta-data is no
proof (a PR's code can set it, on any build it runs in), so a build that names a dispatch
whose build was never recorded is bound only when Buildkite's API lists it as the build
prbot's token created with that key (bot/worker/ci/build_news.py).
"""

from __future__ import annotations

import logging

from bot.engines.base import DISPATCH_META, BuildRef
from bot.events.buildkite import HANDLED_EVENTS
from bot.worker.ci.build_news import (
    bind_reported_build,
    installation_of,
    records_for_news,
    take_build_news,
)
from bot.worker.ci.flow import queue_refresh_for_build, services_for
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
    records, waiting = records_for_news(ctx.engine, ENGINE, build["id"], dispatch_key)
    if not records:
        # Not a build prbot made: the repository's own, whose steps a report may show.
        job = event.payload.get("job")
        job = job if isinstance(job, dict) else None
        queue_refresh_for_build(ctx.engine, ctx.queue, build, job)
        return
    services = services_for(ctx, installation_of(ctx.engine, records[0]))
    number = build.get("number")
    ref = BuildRef(
        ENGINE,
        build["id"],
        number if isinstance(number, int) and not isinstance(number, bool) else None,
        str(build.get("web_url") or ""),
    )
    if waiting and not bind_reported_build(services, ref, records):
        # Not prbot's build, though it names a pending dispatch (a PR's code can set the
        # meta-data): it is the repository's own, and its news is a redraw's like any other's.
        job = event.payload.get("job")
        queue_refresh_for_build(
            ctx.engine, ctx.queue, build, job if isinstance(job, dict) else None
        )
        return
    take_build_news(services, ref, finished=event.action == "build.finished")
