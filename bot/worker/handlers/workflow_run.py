"""``workflow_run``: a GitHub Actions run prbot dispatched has news (bot/engines/actions.py).

A run is matched back to its job records by its id, which GitHub returned with the dispatch
(bot/worker/ci/build_news.py). On a server that returns no run, the run is found by the
dispatch key in its name (``run-name: prbot <key>``), but bound only when GitHub's API lists
it among the ``workflow_dispatch`` runs of prbot's workflow started by the App's bot: any
workflow can take a name, and a writer can dispatch prbot's workflow by hand.
A run on the head SHA is never matched by its SHA: a fork PR's own workflow, or any other CI
on the head, runs there too. The run's repository and installation must be the record's.
"""

from __future__ import annotations

import logging

from bot.engines.actions import dispatch_key_in
from bot.engines.base import BuildRef
from bot.events.payloads import PayloadRejected, WorkflowRunEvent, validate_event
from bot.worker.ci.build_news import (
    bind_reported_build,
    installation_of,
    records_for_news,
    take_build_news,
)
from bot.worker.ci.flow import services_for
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import Event, on_event

log = logging.getLogger(__name__)
ENGINE = "actions"


@on_event("workflow_run", "completed", "in_progress")
def on_workflow_run(ctx: HandlerContext, event: Event) -> None:
    try:
        parsed = validate_event("workflow_run", event.payload)
    except PayloadRejected as exc:  # stored before the intake had this model
        log.warning("workflow_run delivery %s: %s; ignored", event.delivery_id, exc)
        return
    assert isinstance(parsed, WorkflowRunEvent)
    run, repo = parsed.workflow_run, parsed.repository.full_name
    installation = parsed.installation.id
    build_id = f"{repo}:{run.id}"
    key = dispatch_key_in(run.display_title or run.name)
    records, waiting = records_for_news(ctx.engine, ENGINE, build_id, key)
    if not records:
        return  # not a run prbot dispatched
    if (
        any(r.key.repo != repo for r in records)
        or installation_of(ctx.engine, records[0]) != installation
    ):
        log.warning("run %s is not in the repository and installation of its records", build_id)
        return
    services = services_for(ctx, installation)
    ref = BuildRef(ENGINE, build_id, run.run_number, run.html_url or "")
    if waiting and not bind_reported_build(services, ref, records):
        return
    take_build_news(services, ref, finished=event.action == "completed")
