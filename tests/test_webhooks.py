import json
import urllib.parse

import pytest

from bot.events.webhooks import WebhookError, parse_delivery, signature_for, verify_signature

SECRET = "s3cret"


def _headers(body: bytes, event="pull_request", guid="abc-1", secret=SECRET, **extra):
    return {
        "x-hub-signature-256": signature_for(body, secret),
        "x-github-event": event,
        "x-github-delivery": guid,
        "content-type": "application/json",
        **extra,
    }


def test_valid_delivery_is_classified():
    body = json.dumps(
        {"action": "opened", "repository": {"full_name": "o/r"}, "installation": {"id": 5}}
    ).encode()
    delivery = parse_delivery(_headers(body), body, (SECRET,))
    assert (delivery.event, delivery.action, delivery.repo, delivery.installation_id) == (
        "pull_request",
        "opened",
        "o/r",
        5,
    )
    assert delivery.handled


def test_any_rotated_secret_verifies():
    body = b"{}"
    verify_signature(body, signature_for(body, "new"), ("old", "new"))
    with pytest.raises(WebhookError) as err:
        verify_signature(body, signature_for(body, "other"), ("old", "new"))
    assert err.value.status == 401


@pytest.mark.parametrize("header", [None, "", "sha1=abc", "sha256=deadbeef"])
def test_missing_or_bad_signature_is_401(header):
    with pytest.raises(WebhookError) as err:
        verify_signature(b"{}", header, (SECRET,))
    assert err.value.status == 401


def test_malformed_json_is_400_after_signature():
    body = b"{not json"
    with pytest.raises(WebhookError) as err:
        parse_delivery(_headers(body), body, (SECRET,))
    assert err.value.status == 400


def test_non_object_json_is_400():
    body = b"[1, 2]"
    with pytest.raises(WebhookError) as err:
        parse_delivery(_headers(body), body, (SECRET,))
    assert err.value.status == 400


def test_form_encoded_payload_is_accepted():
    body = urllib.parse.urlencode({"payload": json.dumps({"action": "created"})}).encode()
    headers = _headers(
        body, event="issue_comment", **{"content-type": "application/x-www-form-urlencoded"}
    )
    assert parse_delivery(headers, body, (SECRET,)).handled


def test_unhandled_events_and_actions():
    # (pull_request.labeled is handled: a label may approve GPU jobs,
    # bot/worker/handlers/approve.py)
    for event, action in [
        ("push", None),
        ("pull_request", "unlabeled"),
        ("issue_comment", "edited"),
    ]:
        body = json.dumps({"action": action} if action else {}).encode()
        assert not parse_delivery(_headers(body, event=event), body, (SECRET,)).handled


def test_missing_delivery_id_is_400():
    body = b"{}"
    headers = _headers(body)
    del headers["x-github-delivery"]
    with pytest.raises(WebhookError) as err:
        parse_delivery(headers, body, (SECRET,))
    assert err.value.status == 400
