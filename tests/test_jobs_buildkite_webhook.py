"""Buildkite webhook authenticity and parsing: token, signature, stale timestamps, odd bodies."""

import json

import pytest

from bot.events.buildkite import (
    BuildkiteWebhookError,
    check_token_delivery_age,
    parse_event,
    sign,
    verify,
)

TOKEN = "bk-webhook-token"
NOW = 1_800_000_000
BODY = json.dumps(
    {
        "event": "job.finished",
        "build": {
            "id": "0190-build",
            "number": 17,
            "state": "running",
            "blocked": False,
            "meta_data": {"prbot-job": "42"},
            "web_url": "https://buildkite.com/acme/ci/builds/17",
        },
        "job": {"id": "0190-job", "state": "passed", "step_key": "v1-attention-b200"},
    }
).encode()


def test_a_signed_delivery_verifies_with_any_configured_token() -> None:
    headers = {"X-Buildkite-Signature": sign(BODY, TOKEN, NOW)}
    verify(headers, BODY, (TOKEN,), now=NOW)
    verify(headers, BODY, ("old-token", TOKEN), now=NOW + 10)
    verify(headers, BODY, (TOKEN, "old-token"), now=NOW + 10)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"X-Buildkite-Signature": sign(BODY, "wrong", NOW)}, "does not match"),
        ({"X-Buildkite-Signature": sign(BODY + b" ", TOKEN, NOW)}, "does not match"),
        ({"X-Buildkite-Signature": sign(BODY, TOKEN, NOW - 301)}, "stale"),
        ({"X-Buildkite-Signature": sign(BODY, TOKEN, NOW + 301)}, "stale"),
        ({"X-Buildkite-Signature": "timestamp=x,signature=y"}, "malformed"),
        ({"X-Buildkite-Token": "wrong"}, "does not match"),
        ({}, "no X-Buildkite-Token"),
    ],
)
def test_bad_proofs_are_401(headers: dict, message: str) -> None:
    with pytest.raises(BuildkiteWebhookError) as refused:
        verify(headers, BODY, (TOKEN,), now=NOW)
    assert refused.value.status == 401 and message in str(refused.value)


def test_the_plain_token_header_verifies() -> None:
    verify({"x-buildkite-token": TOKEN}, BODY, (TOKEN,), now=NOW)


def test_no_configured_token_refuses_everything() -> None:
    with pytest.raises(BuildkiteWebhookError):
        verify({"X-Buildkite-Token": ""}, BODY, (), now=NOW)


def test_job_finished_is_parsed_with_a_stable_dedupe_key() -> None:
    event = parse_event({"X-Buildkite-Event": "job.finished"}, BODY)
    assert event is not None
    assert (event.build_id, event.build_number, event.job_state) == ("0190-build", 17, "passed")
    assert event.step_key == "v1-attention-b200" and event.meta_data == {"prbot-job": "42"}
    again = parse_event({"X-Buildkite-Event": "job.finished"}, BODY)
    assert again.dedupe_key == event.dedupe_key == "buildkite:job.finished:0190-job:passed"


def test_build_finished_may_be_blocked_and_carries_no_jobs() -> None:
    body = json.dumps({"build": {"id": "b", "state": "passed", "blocked": True}}).encode()
    event = parse_event({"X-Buildkite-Event": "build.finished"}, body)
    assert event.blocked and event.job_id is None
    assert event.dedupe_key == "buildkite:build.finished:b:passed"


def test_ignored_and_malformed_events() -> None:
    assert parse_event({"X-Buildkite-Event": "ping"}, b"{}") is None
    for body in (b"not json", b'{"build": null}', b'{"build": {"id": 7}}', b"[" * 100_000):
        with pytest.raises(BuildkiteWebhookError) as refused:
            parse_event({"X-Buildkite-Event": "build.finished"}, body)
        assert refused.value.status == 400


@pytest.mark.parametrize(
    "signature",
    [
        "timestamp=²,signature=ab",  # a digit to str.isdigit, not to int()
        f"timestamp={'9' * 400},signature=ab",  # too large for the float of the age check
        f"timestamp={'9' * 5000},signature=ab",  # past int()'s digit limit
        "timestamp=1800000000,signature=é",  # compare_digest refuses non-ASCII str
        "timestamp=,signature=",
        ",,,===",
    ],
)
def test_verify_refuses_odd_signatures_with_401_and_never_raises_anything_else(signature) -> None:
    with pytest.raises(BuildkiteWebhookError) as refused:
        verify({"X-Buildkite-Signature": signature}, BODY, (TOKEN,), now=NOW)
    assert refused.value.status == 401
    with pytest.raises(BuildkiteWebhookError):
        verify({"X-Buildkite-Token": "é\udcff"}, BODY, (TOKEN,), now=NOW)


def test_a_token_mode_delivery_is_dated_by_its_builds_own_times() -> None:
    def event(build: dict, job: dict | None = None):
        payload = {"build": {"id": "b", **build}, **({"job": {"id": "j", **job}} if job else {})}
        return parse_event({"X-Buildkite-Event": "job.finished"}, json.dumps(payload).encode())

    now = 1_767_000_000.0  # 2025-12-29T09:20:00Z
    fresh = event({"created_at": "2025-12-29T08:00:00Z"}, {"finished_at": "2025-12-29T09:19:30.5Z"})
    assert fresh.happened_at == now - 29.5
    check_token_delivery_age(fresh, now=now, max_age=300)
    with pytest.raises(BuildkiteWebhookError, match="more than 300 s old"):
        check_token_delivery_age(fresh, now=now + 600, max_age=300)
    with pytest.raises(BuildkiteWebhookError, match="more than"):  # from the future, as well
        check_token_delivery_age(fresh, now=now - 600, max_age=300)
    # Times that do not parse are no times: never an exception, and no time means refused.
    odd = event({"created_at": "²", "started_at": "9" * 400, "finished_at": 12})
    assert odd.happened_at is None
    with pytest.raises(BuildkiteWebhookError, match="no build time"):
        check_token_delivery_age(odd, now=now)
