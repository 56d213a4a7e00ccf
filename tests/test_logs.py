"""Structured logs: JSON lines with the work's fields, and no credential ever written, checked
on a real `prbot serve` that authenticates to the local GitHub test server with real tokens."""

from __future__ import annotations

import io
import json
import logging

import pytest
from intake_helpers import ServeProcess

from bot.cli.demo_stack import wait_for
from bot.report.render import MARKER
from bot.runtime.logs import (
    REDACTED,
    JsonFormatter,
    Redactor,
    TextFormatter,
    delivery_fields,
    job_fields,
    log_fields,
)
from bot.testing.auth import generate_private_key_pem


def _capture(fmt: logging.Formatter, secrets=()) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(Redactor(secrets))
    handler.setFormatter(fmt)
    logger = logging.getLogger(f"prbot-test-{id(stream)}")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, stream


def test_json_lines_carry_the_context_fields():
    logger, stream = _capture(JsonFormatter())
    with log_fields(job_id=7, job_kind="pipeline", repo="acme/w"):
        with log_fields(pr=3, head="abc123", delivery_id=None):
            logger.info("running %s", "checks")
        logger.warning("outer")
    logger.error("plain", extra={"delivery_id": 11})
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines[0]["message"] == "running checks"
    assert {k: lines[0][k] for k in ("job_id", "job_kind", "repo", "pr", "head")} == {
        "job_id": 7,
        "job_kind": "pipeline",
        "repo": "acme/w",
        "pr": 3,
        "head": "abc123",
    }
    assert "pr" not in lines[1] and lines[1]["job_id"] == 7
    assert lines[2]["delivery_id"] == 11 and "job_id" not in lines[2]


def test_text_lines_name_the_fields_too():
    logger, stream = _capture(TextFormatter())
    with log_fields(repo="acme/w", pr=3):
        logger.info("hello")
    assert stream.getvalue().rstrip().endswith("hello [repo=acme/w pr=3]")


@pytest.mark.parametrize(
    "leak",
    [
        "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0.c2lnbmF0dXJlLXZhbHVl",
        "Authorization: token abcdef0123456789",
        "'authorization': 'Bearer abcdef0123456789'",
        "https://x-access-token:s3cr3tvalue@github.com/a/b.git",
    ],
)
def test_credentials_are_redacted_wherever_they_appear(leak):
    logger, stream = _capture(JsonFormatter())
    logger.info("calling with %s", leak)
    try:
        raise RuntimeError(f"failed: {leak}")
    except RuntimeError:
        logger.exception("boom")
    text = stream.getvalue()
    assert REDACTED in text
    for secret_part in ("A1b2C3d4E5", "11ABCDEFG", "c2lnbmF0dXJl", "abcdef0123456789", "s3cr3t"):
        assert secret_part not in text


def test_a_private_key_and_the_webhook_secret_are_redacted():
    pem = generate_private_key_pem()
    logger, stream = _capture(JsonFormatter(), secrets=["the-webhook-secret", "short"])
    logger.warning("key %s and secret the-webhook-secret and word short", pem)
    text = stream.getvalue()
    assert "PRIVATE KEY" not in text and "the-webhook-secret" not in text
    assert "word short" in text  # too short to be a secret: ordinary words stay


def test_a_broken_format_string_still_logs():
    logger, stream = _capture(JsonFormatter())
    logger.info("%s %s", "only one")
    assert "only one" in stream.getvalue()


def test_fields_of_jobs_and_deliveries():
    assert job_fields(5, "pipeline", {"repo": "a/b", "number": 2, "pull": {"head_sha": "x"}}) == {
        "job_id": 5,
        "job_kind": "pipeline",
        "repo": "a/b",
        "pr": 2,
        "head": "x",
    }
    assert job_fields(6, "delivery", {"delivery_id": 9}) == {
        "job_id": 6,
        "job_kind": "delivery",
        "delivery_id": 9,
    }
    assert job_fields(1, "x", None) == {"job_id": 1, "job_kind": "x"}
    payload = {"pull_request": {"number": 4, "head": {"sha": "h"}}}
    assert delivery_fields("a/b", payload) == {"repo": "a/b", "pr": 4, "head": "h"}
    assert delivery_fields("a/b", {"issue": {"number": 8}}) == {"repo": "a/b", "pr": 8}
    assert delivery_fields(None, []) == {}


@pytest.mark.slow
def test_a_real_serve_logs_json_with_fields_and_no_token(tmp_path, github_server):
    from bot.cli.demo_stack import INSTALLATION_ID

    gh = github_server
    gh.add_installation(INSTALLATION_ID, "acme")
    gh.create_repo("acme/widgets", installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
    gh.commit("acme/widgets", "feature", {"a.py": "x = 2\n"})
    number = gh.open_pull_request("acme/widgets", head_branch="feature", title="Change")["number"]
    key = tmp_path / "app.pem"
    key.write_text(gh.private_key_pem)
    secret = "intake-test-secret"
    with ServeProcess(
        tmp_path / "serve",
        PRBOT_APP_ID=str(gh.app_id),
        PRBOT_PRIVATE_KEY_PATH=str(key),
        PRBOT_GITHUB_API_URL=gh.url,
        PRBOT_GITHUB_REQUEST_INTERVAL="0",
        PRBOT_GITHUB_WRITE_INTERVAL="0",
        PRBOT_LOG_LEVEL="DEBUG",
        PRBOT_LOG_FORMAT="json",
    ) as serve:
        gh.configure_hook(f"{serve.url}/webhooks/github", secret)
        gh.send_webhook("pull_request", gh.pull_request_event("acme/widgets", number, "opened"))
        wait_for(
            lambda: any(MARKER in c["body"] for c in gh.comments("acme/widgets", number)),
            timeout=120,
            what="report",
        )
    output = serve.output()
    records = []
    for line in output.splitlines():
        if line.startswith("prbot: "):
            continue  # progress lines of the CLI, not logs
        records.append(json.loads(line))  # every log line is one JSON object
    # Real credentials went through the flow (installation tokens, App JWTs) ...
    tokens = {c for c in gh.seen_credentials if c.startswith("ghs_")}
    assert tokens and any(c.startswith("eyJ") for c in gh.seen_credentials)
    # ... and none of them, nor the key or the webhook secret, reached the logs.
    for credential in gh.seen_credentials | {secret}:
        assert credential not in output
    assert "PRIVATE KEY" not in output
    pipeline = [r for r in records if r.get("job_kind") == "pipeline"]
    assert pipeline and {"job_id", "repo", "pr", "head"} <= set(pipeline[-1])
    assert any("delivery_id" in r and r.get("pr") == number for r in records)


def test_configure_installs_one_handler_or_keeps_an_embedders():
    from bot.runtime.logs import configure

    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    try:
        root.handlers[:] = []
        configure("INFO", "json", secrets=["a-long-secret-value"])
        (handler,) = root.handlers
        assert isinstance(handler.formatter, JsonFormatter) and root.level == logging.INFO
        configure("WARNING", "text")  # again: the handler is kept, no second redactor
        assert root.handlers == [handler] and len(handler.filters) == 1
    finally:
        root.handlers[:] = saved
        root.setLevel(level)


def test_a_run_queued_without_its_head_logs_the_head_once_github_names_it(
    app_context, github_server
):
    # A /recheck or a repair sweep queues the run with no head (the pipeline asks GitHub).
    # In serve, such a sweep could win the race with the event's own run (the event's
    # handler writes the open-PR index, then queues): the PR's only run then had no head.
    from bot.worker.handlers.pipeline import run_pipeline

    github_server.create_repo("acme/widgets", installation_id=1, files={"a.py": "x = 1\n"})
    github_server.commit("acme/widgets", "feature", {"a.py": "x = 2\n"}, "change a")
    pull = github_server.open_pull_request("acme/widgets", head_branch="feature", title="T")
    payload = github_server.pull_request_event("acme/widgets", pull["number"], "opened")
    app_context.enqueue_pipeline(payload, None, number=pull["number"], reason="/recheck")
    [job] = [j for j in app_context.queue.jobs(limit=10) if j.kind == "pipeline"]
    assert job.payload["pull"] is None
    logger = logging.getLogger("bot")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(Redactor())
    handler.setFormatter(JsonFormatter())
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with log_fields(**job_fields(job.id, job.kind, job.payload)):
            run_pipeline(app_context, job.payload)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert records and records[-1]["message"].endswith("published")
    assert records[-1]["head"] == pull["head"]["sha"] and records[-1]["job_id"] == job.id
