"""Webhook promises: any configured secret verifies, and nothing is parsed before it does."""

from __future__ import annotations

import urllib.parse

import pytest

from bot.events.webhooks import WebhookError, parse_delivery, signature_for, verify_signature

BODY = b'{"action": "opened"}'
FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    "secrets",
    [("new", "old"), ("old", "new"), ("older", "new", "old")],
    ids=["first", "last", "middle"],
)
def test_any_rotated_secret_verifies_wherever_it_is_listed(secrets):
    verify_signature(BODY, signature_for(BODY, "new"), secrets)


def test_a_secret_nobody_configured_never_verifies():
    with pytest.raises(WebhookError) as err:
        verify_signature(BODY, signature_for(BODY, "stolen"), ("new", "old"))
    assert err.value.status == 401


def _headers(signature: str | None, content_type: str = "application/json") -> dict[str, str]:
    headers = {
        "x-github-event": "pull_request",
        "x-github-delivery": "guid-1",
        "content-type": content_type,
    }
    if signature is not None:
        headers["x-hub-signature-256"] = signature
    return headers


@pytest.mark.parametrize(
    "body, content_type",
    [
        (b"{not json", "application/json"),
        (b"[1, 2]", "application/json"),
        (urllib.parse.urlencode({"payload": "{oops"}).encode(), FORM),
    ],
    ids=["broken-json", "not-an-object", "broken-form-payload"],
)
@pytest.mark.parametrize("signature", ["wrong-secret", "unsigned"])
def test_malformed_json_is_400_only_after_the_signature_check(body, content_type, signature):
    header = signature_for(body, "attacker") if signature == "wrong-secret" else None
    with pytest.raises(WebhookError) as err:
        parse_delivery(_headers(header, content_type), body, ("s3cret",))
    assert err.value.status == 401  # an unverified body is never parsed
    with pytest.raises(WebhookError) as err:
        parse_delivery(_headers(signature_for(body, "s3cret"), content_type), body, ("s3cret",))
    assert err.value.status == 400  # the same body, validly signed, is malformed
