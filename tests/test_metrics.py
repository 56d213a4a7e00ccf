"""Metric labels come from closed sets: nothing a request or a user chose becomes one."""

from __future__ import annotations

import pytest

from bot.runtime.metrics import endpoint_template, event_label


def test_event_labels_are_known_events_other_or_unverified():
    assert event_label("pull_request", verified=True) == "pull_request"
    assert event_label("x" * 8000, verified=True) == "other"
    assert event_label("pull_request", verified=False) == "unverified"
    assert event_label(None, verified=True) == "other"


def test_endpoint_templates_keep_api_words_and_hide_names():
    assert endpoint_template("/repos/o/r/issues/12/comments?page=2") == (
        "/repos/{repo}/issues/{n}/comments"
    )
    # A commenter's login (from a PR comment) and a GHES prefix never reach the label.
    assert endpoint_template("/api/v3/repos/o/r/collaborators/evil-user/permission") == (
        "/repos/{repo}/collaborators/{x}/permission"
    )
    sha = "0123456789abcdef" * 2 + "01234567"
    assert endpoint_template(f"https://ghes.example/api/v3/repos/o/r/commits/{sha}/check-runs") == (
        "/repos/{repo}/commits/{sha}/check-runs"
    )
    assert endpoint_template("/app/installations/5/access_tokens") == (
        "/app/installations/{n}/access_tokens"
    )


def test_endpoint_templates_are_bounded_in_length():
    deep = "/" + "/".join(f"part{i}" for i in range(50))
    assert endpoint_template(deep) == "/" + "/".join(["{x}"] * 8) + "/…"


def _sample(registry, name: str, labels: dict[str, str]) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_deliveries_are_counted_with_closed_labels():
    from bot.runtime.metrics import REGISTRY, count_delivery, exposition

    accepted = {"event": "pull_request", "outcome": "accepted"}
    odd = {"event": "unverified", "outcome": "error"}
    before = _sample(REGISTRY, "prbot_deliveries_total", accepted)
    before_odd = _sample(REGISTRY, "prbot_deliveries_total", odd)
    count_delivery("pull_request", "accepted", verified=True)
    count_delivery("pull_request", "<script>", verified=False)  # neither label is taken as is
    assert _sample(REGISTRY, "prbot_deliveries_total", accepted) == before + 1
    assert _sample(REGISTRY, "prbot_deliveries_total", odd) == before_odd + 1
    body, content_type = exposition()
    assert content_type.startswith("text/plain")
    assert b'prbot_deliveries_total{event="pull_request",outcome="accepted"}' in body
    assert b"<script>" not in body


def test_queue_depth_is_read_at_scrape_time_and_a_failing_read_gives_zeros():
    from prometheus_client import CollectorRegistry

    from bot.runtime.metrics import QueueDepthCollector

    counts = {"queued": 3, "dead": 1}
    registry = CollectorRegistry()
    registry.register(QueueDepthCollector(lambda: dict(counts)))
    assert registry.get_sample_value("prbot_queue_jobs", {"state": "queued"}) == 3
    assert registry.get_sample_value("prbot_dead_letters") == 1
    counts["queued"] = 0
    assert registry.get_sample_value("prbot_queue_jobs", {"state": "queued"}) == 0

    def broken() -> dict[str, int]:
        raise OSError("database is locked")

    failing = CollectorRegistry()
    failing.register(QueueDepthCollector(broken))
    assert failing.get_sample_value("prbot_dead_letters") == 0


def test_worker_metrics_come_from_the_process_files_when_told(tmp_path, monkeypatch):
    from bot.runtime import metrics

    monkeypatch.setattr(metrics, "_worker_metrics_dir", None)
    metrics.JOB_LATENCY.labels("pipeline", "ok").observe(0.2)
    body, _ = metrics.exposition()
    assert b'prbot_job_latency_seconds_count{kind="pipeline",outcome="ok"}' in body
    # Worker processes write files; with a directory, what this process holds is not read.
    metrics.read_worker_processes(tmp_path)
    body, _ = metrics.exposition()
    assert b"prbot_job_latency_seconds_count" not in body
    assert b"prbot_deliveries_total" in body  # the intake's own metrics still are


def test_every_pygithub_call_is_counted_by_endpoint_template(github_server):
    from github import Auth, Github, GithubException
    from prometheus_client import generate_latest

    from bot.runtime.metrics import GITHUB_CALL_LOGGER, WORKER_REGISTRY, install_github_call_counter

    github_server.add_installation(7, "acme")
    github_server.create_repo("acme/widgets", installation_id=7, files={"a.py": "x\n"})
    install_github_call_counter()
    heard: list[tuple[str, str, int]] = []
    GITHUB_CALL_LOGGER.listeners.append(lambda *call: heard.append(call))
    labels = {"method": "GET", "endpoint": "/repos/{repo}", "status": "200"}
    missing = {"method": "GET", "endpoint": "/repos/{repo}", "status": "404"}
    before = _sample(WORKER_REGISTRY, "prbot_github_calls_total", labels)
    before_missing = _sample(WORKER_REGISTRY, "prbot_github_calls_total", missing)
    try:
        auth = Auth.AppAuth(github_server.app_id, github_server.private_key_pem)
        gh = Github(auth=auth.get_installation_auth(7), base_url=github_server.url, retry=None)
        assert gh.get_repo("acme/widgets").full_name == "acme/widgets"
        with pytest.raises(GithubException, match="404"):
            gh.get_repo("acme/secret-name")
    finally:
        GITHUB_CALL_LOGGER.listeners.clear()
    assert _sample(WORKER_REGISTRY, "prbot_github_calls_total", labels) == before + 1
    assert _sample(WORKER_REGISTRY, "prbot_github_calls_total", missing) == before_missing + 1
    assert ("GET", "/repos/acme/widgets", 200) in heard
    exposed = generate_latest(WORKER_REGISTRY)
    assert b"secret-name" not in exposed and b"widgets" not in exposed


def test_the_sqlite_intake_exports_what_waits_in_its_inbox(tmp_path):
    from prometheus_client import CollectorRegistry

    from bot.runtime.metrics import QueueDepthCollector
    from bot.store.db import make_engine, migrate
    from bot.store.deliveries import IncomingDelivery
    from bot.store.inbox import Inbox, waiting_in_inbox

    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    registry = CollectorRegistry()
    registry.register(QueueDepthCollector(lambda: {}, inbox=lambda: waiting_in_inbox(engine)))
    assert registry.get_sample_value("prbot_intake_inbox_deliveries") == 0  # no inbox yet
    box = Inbox(engine)
    with box.engine.begin() as connection:
        box.add(connection, [IncomingDelivery(guid="g", event="ping", action=None, body=b"{}")])
    assert registry.get_sample_value("prbot_intake_inbox_deliveries") == 1
    box.move()
    box.forget_now(1)
    assert registry.get_sample_value("prbot_intake_inbox_deliveries") == 0
    box.dispose()
    engine.dispose()
