import json
import urllib.parse

import pytest

from bot.events.webhooks import (
    SignatureCheck,
    WebhookError,
    check_signature_header,
    classify,
    signature_for,
)

SECRET = "s3cret"


def _headers(body: bytes, event="pull_request", guid="abc-1", **extra):
    return {
        "x-github-event": event,
        "x-github-delivery": guid,
        "content-type": "application/json",
        **extra,
    }


def _check(body: bytes, secrets: tuple[str, ...], chunk: int = 3) -> SignatureCheck:
    """The check as the intake feeds it: the body in pieces, as they arrive."""
    check = SignatureCheck(secrets)
    for start in range(0, len(body), chunk):
        check.update(body[start : start + chunk])
    return check


def test_valid_delivery_is_classified():
    body = json.dumps(
        {"action": "opened", "repository": {"full_name": "o/r"}, "installation": {"id": 5}}
    ).encode()
    _check(body, (SECRET,)).verify(signature_for(body, SECRET))
    delivery = classify(_headers(body), body)
    assert (delivery.event, delivery.action, delivery.repo, delivery.installation_id) == (
        "pull_request",
        "opened",
        "o/r",
        5,
    )
    assert delivery.handled


def test_a_body_fed_in_chunks_verifies_with_any_rotated_secret():
    body = b'{"action": "opened", "pad": "' + b"x" * 1000 + b'"}'
    for secrets in [("new", "old"), ("old", "new"), ("older", "new", "old")]:
        _check(body, secrets).verify(signature_for(body, "new"))
    with pytest.raises(WebhookError) as err:
        _check(body, ("old", "new")).verify(signature_for(body, "other"))
    assert err.value.status == 401


@pytest.mark.parametrize("header", [None, "", "sha1=abc", "sha256=deadbeef", "sha256=" + "0" * 65])
def test_missing_or_malformed_signature_is_401_before_any_body(header):
    with pytest.raises(WebhookError) as err:
        check_signature_header(header)
    assert err.value.status == 401


def test_no_configured_secret_refuses_everything():
    with pytest.raises(WebhookError) as err:
        SignatureCheck(())
    assert err.value.status == 500


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]"], ids=["broken", "not-an-object"])
def test_malformed_json_is_rejected_with_its_reason(body):
    with pytest.raises(WebhookError) as err:
        classify(_headers(body), body)
    assert err.value.status == 400


def test_form_encoded_payload_is_accepted():
    body = urllib.parse.urlencode({"payload": json.dumps({"action": "created"})}).encode()
    headers = _headers(
        body, event="issue_comment", **{"content-type": "application/x-www-form-urlencoded"}
    )
    assert classify(headers, body).handled


def test_unhandled_events_and_actions():
    # (pull_request.labeled is handled: a label may approve GPU jobs, handlers/approve.py)
    for event, action in [
        ("push", None),
        ("pull_request", "unlabeled"),
        ("issue_comment", "edited"),
    ]:
        body = json.dumps({"action": action} if action else {}).encode()
        assert not classify(_headers(body, event=event), body).handled


def test_missing_delivery_id_is_400():
    body = b"{}"
    headers = _headers(body)
    del headers["x-github-delivery"]
    with pytest.raises(WebhookError) as err:
        classify(headers, body)
    assert err.value.status == 400
