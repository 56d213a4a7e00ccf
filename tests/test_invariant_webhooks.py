"""Webhook promises on the intake that runs in production (`POST /webhooks/github` over real
HTTP): any configured secret verifies during a rotation, a secret nobody configured never
does, and nothing is parsed or stored before the signature checks."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import httpx
import pytest
from intake_helpers import intake

from bot.events.webhooks import signature_for
from bot.store import deliveries

FORM = "application/x-www-form-urlencoded"
BODY = json.dumps({"action": "created", "installation": {"id": 5}}).encode()


def _post(url: str, body: bytes, signature: str | None, content_type="application/json"):
    headers = {
        "Content-Type": content_type,
        "X-GitHub-Event": "installation",
        "X-GitHub-Delivery": str(uuid.uuid4()),
    }
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return httpx.post(f"{url}/webhooks/github", content=body, headers=headers, timeout=30)


@pytest.mark.parametrize(
    "secrets",
    [("new", "old"), ("old", "new"), ("older", "new", "old")],
    ids=["first", "last", "middle"],
)
def test_any_rotated_secret_verifies_wherever_it_is_listed(engine, tmp_path, secrets):
    # PRBOT_WEBHOOK_SECRET=new,old: deliveries signed with either are taken, others refused.
    with intake(engine, tmp_path, webhook_secrets=secrets) as url:
        for secret in secrets:
            response = _post(url, BODY, signature_for(BODY, secret))
            assert response.status_code == 202, (secret, response.text)
        refused = _post(url, BODY, signature_for(BODY, "stolen"))
        assert refused.status_code == 401
    assert deliveries.count_deliveries(engine) == len(secrets)


@pytest.mark.parametrize(
    "body, content_type",
    [
        (b"{not json", "application/json"),
        (b"[1, 2]", "application/json"),
        (urllib.parse.urlencode({"payload": "{oops"}).encode(), FORM),
    ],
    ids=["broken-json", "not-an-object", "broken-form-payload"],
)
def test_malformed_json_is_400_only_after_the_signature_check(engine, tmp_path, body, content_type):
    with intake(engine, tmp_path, webhook_secrets=("s3cret",)) as url:
        for signature in (signature_for(body, "attacker"), "sha256=" + "0" * 64):
            refused = _post(url, body, signature, content_type)
            assert refused.status_code == 401, refused.text  # an unverified body is never parsed
        assert _post(url, body, None, content_type).status_code == 401
        malformed = _post(url, body, signature_for(body, "s3cret"), content_type)
        assert malformed.status_code == 400, malformed.text  # the same body, validly signed
    # Only the signed one is kept, as rejected with its reason; the unsigned left nothing.
    assert deliveries.count_deliveries(engine) == 1
    [rejected] = deliveries.rejected_deliveries(engine)
    assert rejected.event == "installation"
