"""Webhook deliveries as data: signature check and event classification, with no I/O.

Like gidgethub's sansio module, this turns headers and body into a decision; the HTTP
server around it only moves bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

# Events and actions prbot acts on; everything else is acknowledged and dropped unstored.
HANDLED_ACTIONS: dict[str, frozenset[str] | None] = {
    "pull_request": frozenset(
        {"opened", "synchronize", "reopened", "edited", "ready_for_review", "closed"}
    ),
    "issue_comment": frozenset({"created"}),
    "installation": None,  # every action
    "installation_repositories": None,
}


class WebhookError(ValueError):
    """A delivery that must be refused; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def signature_for(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_signature(body: bytes, header: str | None, secrets: tuple[str, ...]) -> None:
    """Accept when any configured secret signs the body (several during rotation)."""
    if not secrets:
        raise WebhookError(500, "no webhook secret is configured")
    if not header or not header.startswith("sha256="):
        raise WebhookError(401, "missing or malformed X-Hub-Signature-256")
    valid = False
    for secret in secrets:
        # Compare against every secret, so timing does not reveal which one matched.
        valid |= hmac.compare_digest(signature_for(body, secret), header)
    if not valid:
        raise WebhookError(401, "signature does not match")


@dataclass(frozen=True)
class Delivery:
    guid: str
    event: str
    action: str | None
    payload: dict[str, Any]

    @property
    def repo(self) -> str | None:
        repository = self.payload.get("repository")
        return repository.get("full_name") if isinstance(repository, dict) else None

    @property
    def installation_id(self) -> int | None:
        installation = self.payload.get("installation")
        value = installation.get("id") if isinstance(installation, dict) else None
        return value if isinstance(value, int) else None

    @property
    def handled(self) -> bool:
        if self.event not in HANDLED_ACTIONS:
            return False
        actions = HANDLED_ACTIONS[self.event]
        return actions is None or self.action in actions


def parse_body(body: bytes, content_type: str | None) -> dict[str, Any]:
    """JSON payload from either content type GitHub can be configured to send."""
    media = (content_type or "application/json").split(";")[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        fields = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        raw = (fields.get("payload") or [""])[0]
    elif media == "application/json":
        raw = body
    else:
        raise WebhookError(415, f"unsupported content type {media!r}")
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise WebhookError(400, "body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise WebhookError(400, "payload must be a JSON object")
    return payload


def parse_delivery(headers: dict[str, str], body: bytes, secrets: tuple[str, ...]) -> Delivery:
    """Verify and classify one delivery. ``headers`` keys must be lower-case."""
    verify_signature(body, headers.get("x-hub-signature-256"), secrets)
    event = headers.get("x-github-event")
    guid = headers.get("x-github-delivery")
    if not event or not guid:
        raise WebhookError(400, "missing X-GitHub-Event or X-GitHub-Delivery")
    if len(guid) > 100:
        raise WebhookError(400, "X-GitHub-Delivery is too long")
    payload = parse_body(body, headers.get("content-type"))
    action = payload.get("action")
    return Delivery(guid, event, action if isinstance(action, str) else None, payload)
