"""The buildkite and workflow_run handlers on odd deliveries: not prbot's build, no id, a run
matched by its head SHA alone (a fork PR's run lists no pull requests)."""

from __future__ import annotations

import pytest

from bot.engines.base import EngineError
from bot.store import jobs as store
from bot.worker.handlers.buildkite import on_buildkite
from bot.worker.handlers.registry import Event
from bot.worker.handlers.workflow_run import on_workflow_run

HEAD = "a" * 40
REPO = "acme/widgets"


def test_deliveries_about_builds_prbot_did_not_make_change_nothing(handler_context) -> None:
    for payload in ({}, {"build": {"id": 7}}, {"build": {"id": "not-ours", "meta_data": []}}):
        on_buildkite(handler_context, Event("buildkite", "job.finished", payload, 1))
    for payload in (
        {},
        {"workflow_run": {"id": "x"}, "repository": {"full_name": REPO}},
        {"workflow_run": {"id": 5, "display_title": "nightly"}, "repository": {"full_name": REPO}},
    ):
        on_workflow_run(handler_context, Event("workflow_run", "completed", payload, 1))
    assert store.records_for_head(handler_context.engine, REPO, 7, HEAD) == []


def test_a_run_is_matched_by_its_head_sha_when_nothing_else_names_it(handler_context) -> None:
    db = handler_context.engine
    spec = store.JobSpec(
        store.JobKey(REPO, 7, HEAD, "smoke"), HEAD, "gpu_smoke", "actions", "b200", "smoke"
    )
    assert store.claim(db, spec, attempt=1, dispatch_key="prbot-" + "2" * 32)
    store.record_build(
        db,
        "prbot-" + "2" * 32,
        engine_name="actions",
        build_id="dispatch:x",
        build_number=None,
        build_url="",
    )
    run = {"id": 99, "head_sha": HEAD, "display_title": "GPU", "run_number": 3, "html_url": ""}
    payload = {"workflow_run": run, "repository": {"full_name": REPO}}
    # Without an App the engine cannot be asked (the job is retried); the run is still tied
    # to its records first.
    with pytest.raises(EngineError, match="installation"):
        on_workflow_run(handler_context, Event("workflow_run", "completed", payload, 1))
    (record,) = store.records_for_head(db, REPO, 7, HEAD)
    assert record.build_id == f"{REPO}:99" and record.build_number == 3
