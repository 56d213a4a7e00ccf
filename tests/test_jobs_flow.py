"""The jobs flow's edges without GitHub: dry runs, unconfigured engines, what asks for what."""

from __future__ import annotations

import pytest

from bot.checks.base import Section, Status
from bot.engines.base import EngineError
from bot.report.render import Report
from bot.runtime.settings import CiSettings, ConfigError, Settings
from bot.store import jobs as store
from bot.store import state
from bot.store.queue import Queue
from bot.worker.ci.flow import (
    Services,
    dispatch_head,
    dispatch_mode,
    engines_from_settings,
    keep_report,
    republish,
)

HEAD, BASE = "a" * 40, "b" * 40
REPO = "acme/widgets"


def report(findings: list[dict]) -> Report:
    jobs = Section("jobs", Status.PASS, "1 smoke test selected on b200", findings, {})
    other = Section("changed_files", Status.PASS, "1 file", [], {"rows": []})
    return Report(REPO, 7, HEAD, BASE, [other, jobs])


SMOKE = {
    "name": "V1 attention (B200)",
    "kind": "gpu_smoke",
    "hardware": "b200",
    "reason": "r",
    "status": "selected",
    "engine": "buildkite",
    "url": None,
    "step_key": "v1-attention-b200",
    "backends": [],
    "config": None,
}


def services(db, tmp_path, **settings) -> Services:
    configured = Settings(webhook_secrets=("s3cret",), data_dir=tmp_path, **settings)
    return Services(db, configured, None, None, engines_from_settings(configured))


def test_dispatch_keys_need_a_secret_unless_nothing_is_sent(tmp_path) -> None:
    assert Settings(dry_run=True).dispatch_key_secret()
    one = Settings(webhook_secrets=("new", "old")).dispatch_key_secret()
    assert one != Settings(webhook_secrets=("other",)).dispatch_key_secret()
    assert b"new" not in one  # derived, never the webhook secret itself
    with pytest.raises(ConfigError, match="PRBOT_WEBHOOK_SECRET"):
        Settings().dispatch_key_secret()


def test_what_a_run_was_asked_for() -> None:
    assert dispatch_mode("pull_request.opened") == "event"
    assert dispatch_mode(None) == "event"
    assert dispatch_mode("/recheck flaky runner") == "recheck"
    assert dispatch_mode("/recheck all") == "recheck_all"


def test_an_engine_that_is_not_configured_is_a_one_line_refusal(tmp_path) -> None:
    engines = engines_from_settings(Settings(data_dir=tmp_path))
    with pytest.raises(EngineError, match="PRBOT_BUILDKITE"):
        engines("buildkite")
    with pytest.raises(EngineError, match="installation"):
        engines("actions")
    with pytest.raises(EngineError, match="no CI engine"):
        engines("jenkins")
    configured = Settings(
        data_dir=tmp_path,
        ci=CiSettings(
            buildkite_organization="acme", buildkite_pipeline="ci", buildkite_token="t0ken"
        ),
    )
    made = engines_from_settings(configured)
    assert made("buildkite") is made("buildkite")


def test_a_report_without_jobs_queues_nothing(engine, tmp_path) -> None:
    assert keep_report(engine, report([]), {}) is None
    assert keep_report(engine, Report(REPO, None, HEAD, BASE, []), {}) is None
    assert dispatch_head(services(engine, tmp_path), REPO, 7, "c" * 40) is None


def test_a_dry_run_records_the_jobs_and_sends_nothing(engine, tmp_path) -> None:
    payload = keep_report(engine, report([SMOKE]), {"trusted": True, "mode": "event"})
    assert payload == {
        "repo": REPO,
        "number": 7,
        "head_sha": HEAD,
        "installation_id": None,
        "mode": "event",
    }
    dry = services(engine, tmp_path, dry_run=True)
    dispatch_head(dry, REPO, 7, HEAD)
    (record,) = store.records_for_head(engine, REPO, 7, HEAD)
    assert (record.state, record.attempt) == ("selected", 0)
    stored = state.latest_report(engine, REPO, 7, HEAD)
    assert stored is not None and "GPU jobs" in stored["markdown"]
    assert republish(dry, REPO, 7, "f" * 40) is False  # nothing kept for that head


def test_without_an_engine_the_jobs_fail_with_the_reason(engine, tmp_path) -> None:
    keep_report(engine, report([SMOKE]), {"trusted": True, "mode": "event"})
    state.observe_head(engine, REPO, 7, HEAD, state_time())
    dispatch_head(services(engine, tmp_path), REPO, 7, HEAD)
    (record,) = store.records_for_head(engine, REPO, 7, HEAD)
    assert record.state == "failed" and "not configured" in record.error
    markdown = state.latest_report(engine, REPO, 7, HEAD)["markdown"]
    assert "❌ failed" in markdown and "not configured" in markdown


def test_a_moved_head_sends_nothing(engine, tmp_path) -> None:
    keep_report(engine, report([SMOKE]), {"trusted": True, "mode": "event"})
    state.observe_head(engine, REPO, 7, "c" * 40, state_time())
    outcome = dispatch_head(services(engine, tmp_path), REPO, 7, HEAD)
    assert outcome is not None and outcome.head_moved == "c" * 40
    assert store.records_for_head(engine, REPO, 7, HEAD) == []
    assert Queue(engine).jobs() == []


def state_time():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def test_write_access_or_a_trusted_team_makes_an_author_trusted(app_context, github_server):
    from bot.worker.ci.flow import _trusted, services_for

    github_server.create_repo(REPO, installation_id=1, files={"a.py": "x = 1\n"})
    services = services_for(app_context, 1)
    context = {"trusted": False, "author": "bob", "trusted_teams": ["acme/gpu", "malformed"]}
    assert not _trusted(services, REPO, context)
    github_server.teams[("acme", "gpu")] = {"bob"}
    assert _trusted(services, REPO, context)
    github_server.set_permission(REPO, "carol", "write")
    assert _trusted(services, REPO, {**context, "author": "carol"})
    assert not _trusted(services, REPO, {"trusted": False})
