"""The buildkite and workflow_run handlers on odd deliveries (not prbot's build, no id, shapes
stored before the intake validated them), and a run that reports before its dispatch recorded
it: bound only once GitHub lists it as the run that dispatch made."""

from __future__ import annotations

from bot.checks.base import Section, Status
from bot.jobs.records import pending_build_id
from bot.report.render import Report
from bot.store import jobs as store
from bot.worker.ci.flow import keep_report
from bot.worker.handlers.buildkite import on_buildkite
from bot.worker.handlers.registry import Event
from bot.worker.handlers.workflow_run import on_workflow_run

HEAD, BASE = "a" * 40, "b" * 40
REPO = "acme/widgets"
KEY = "prbot-" + "2" * 32
SMOKE = {
    "name": "GPU smoke",
    "kind": "gpu_smoke",
    "hardware": "b200",
    "reason": "r",
    "status": "selected",
    "engine": "actions",
    "url": None,
    "step_key": "smoke",
    "backends": [],
    "config": None,
}


def test_deliveries_about_builds_prbot_did_not_make_change_nothing(handler_context) -> None:
    for payload in ({}, {"build": {"id": 7}}, {"build": {"id": "not-ours", "meta_data": []}}):
        on_buildkite(handler_context, Event("buildkite", "job.finished", payload, 1))
    for payload in (
        {},
        {"workflow_run": {"id": "x"}, "repository": {"full_name": REPO}},
        {"workflow_run": {"id": 5, "display_title": "nightly"}, "repository": {"full_name": REPO}},
        {"workflow_run": {"id": 5}, "repository": {"full_name": REPO}, "installation": {"id": 1}},
    ):
        on_workflow_run(handler_context, Event("workflow_run", "completed", payload, 1))
    assert store.records_for_head(handler_context.engine, REPO, 7, HEAD) == []


def claimed(db, github_server, *, build_id: str | None) -> store.JobSpec:
    """A PR whose smoke job is claimed under KEY (its report kept for installation 1)."""
    github_server.create_repo(REPO, installation_id=1, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"})
    pull = github_server.open_pull_request(REPO, head_branch="feature", title="T", author="m")
    number, head = pull["number"], pull["head"]["sha"]
    jobs = Section("jobs", Status.PASS, "1 smoke test selected on b200", [SMOKE], {})
    report = Report(REPO, number, head, pull["base"]["sha"], [jobs])
    keep_report(db, report, {"installation_id": 1, "trusted": True})
    key = store.JobKey(REPO, number, head, "GPU smoke")
    spec = store.JobSpec(key, head, "gpu_smoke", "actions", "b200", "smoke")
    assert store.claim(db, spec, attempt=1, dispatch_key=KEY)
    if build_id is not None:
        bind = {"engine_name": "actions", "build_number": None, "build_url": ""}
        store.record_build(db, KEY, build_id=build_id, **bind)
    return spec


def deliver(ctx, github_server, run_id: int, conclusion: str) -> None:
    payload = github_server.actions.finish(run_id, conclusion, jobs={"smoke": conclusion})
    on_workflow_run(ctx, Event("workflow_run", "completed", payload, 1))


def test_a_run_that_reports_before_its_dispatch_recorded_it(app_context, github_server) -> None:
    # The worker died between GitHub's answer and recording the run: the record has its key
    # and no run. A fork's pull_request run named with that key, and a run on the head with
    # no name at all, are not the dispatch's run.
    db = app_context.engine
    spec = claimed(db, github_server, build_id=None)
    actions = github_server.actions
    fork = actions.add_run(
        REPO, head_sha=spec.commit_sha, title=f"prbot {KEY}", event="pull_request"
    )
    deliver(app_context, github_server, fork, "success")
    lint = actions.add_run(REPO, head_sha=spec.commit_sha, title="lint", event="pull_request")
    deliver(app_context, github_server, lint, "success")
    record = store.get_record(db, spec.key)
    assert record is not None and record.awaiting_build and record.state == "queued"
    # A writer's own dispatch of prbot's workflow with the key: not the App bot's run.
    by_hand = actions.add_run(
        REPO,
        head_sha=BASE,
        title=f"prbot {KEY}",
        event="workflow_dispatch",
        workflow="prbot-gpu.yml",
        actor="maintainer",
    )
    deliver(app_context, github_server, by_hand, "success")
    assert store.get_record(db, spec.key).awaiting_build
    # The dispatch's own run: workflow_dispatch of prbot's workflow, listed by GitHub.
    real = actions.add_run(
        REPO,
        head_sha=BASE,
        title=f"prbot {KEY}",
        event="workflow_dispatch",
        workflow="prbot-gpu.yml",
        actor=github_server.bot_login,  # prbot's installation token started it
    )
    deliver(app_context, github_server, real, "failure")
    record = store.get_record(db, spec.key)
    assert record is not None and record.build_id == f"{REPO}:{real}"
    assert record.state == "failed"
    # The fork's run reports again: the record is bound and stays the real run's.
    deliver(app_context, github_server, fork, "success")
    assert store.get_record(db, spec.key).state == "failed"


def test_a_pending_run_is_bound_to_the_run_github_lists(app_context, github_server) -> None:
    db = app_context.engine
    spec = claimed(db, github_server, build_id=pending_build_id(KEY))
    real = github_server.actions.add_run(
        REPO,
        head_sha=BASE,
        title=f"prbot {KEY}",
        event="workflow_dispatch",
        workflow="prbot-gpu.yml",
        actor=github_server.bot_login,  # prbot's installation token started it
    )
    # The same run's news from another installation is not its records' news.
    payload = github_server.actions.finish(real, "success", jobs={"smoke": "success"})
    on_workflow_run(
        app_context, Event("workflow_run", "completed", {**payload, "installation": {"id": 2}}, 1)
    )
    assert store.get_record(db, spec.key).awaiting_build
    on_workflow_run(app_context, Event("workflow_run", "completed", payload, 1))
    record = store.get_record(db, spec.key)
    assert (record.build_id, record.state) == (f"{REPO}:{real}", "passed")
