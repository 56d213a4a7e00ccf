"""Webhook deliveries as data: signature check and event classification, with no I/O.

Like gidgethub's sansio module, this turns headers and body into a decision; the HTTP
server around it only moves bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import urllib.parse
from dataclasses import dataclass
from typing import Any

from bot.events.payloads import PayloadRejected, load_json, validate_event

MAX_GUID_CHARS = 100
MAX_ACTION_CHARS = 100

# Events and actions prbot acts on; everything else is acknowledged and dropped unstored.
HANDLED_ACTIONS: dict[str, frozenset[str] | None] = {
    "pull_request": frozenset(
        {"opened", "synchronize", "reopened", "edited", "ready_for_review", "closed", "labeled"}
    ),
    "issue_comment": frozenset({"created"}),
    # Results of GPU jobs dispatched to GitHub Actions (bot/worker/handlers/workflow_run.py).
    "workflow_run": frozenset({"completed", "in_progress"}),
    # GitHub's Re-run buttons, and the "Apply fix" button prbot puts on its check run; other
    # apps' runs and suites of a reported head, and their commit statuses, redraw its smoke
    # steps (bot/worker/handlers/repository_ci.py).
    "check_run": frozenset({"rerequested", "requested_action", "created", "completed"}),
    "check_suite": frozenset({"rerequested", "completed"}),
    "status": None,  # a status event has no action
    "installation": None,  # every action
    "installation_repositories": None,
}


class WebhookError(ValueError):
    """A delivery that must be refused; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class DeliveryRejected(WebhookError):
    """A signed delivery whose payload prbot cannot use: answered 400, stored as rejected."""

    def __init__(self, guid: str, event: str, action: str | None, reason: str) -> None:
        super().__init__(400, reason)
        self.guid = guid
        self.event = event
        self.action = action
        self.reason = reason


def signature_for(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def check_signature_header(header: str | None) -> str:
    """The ``X-Hub-Signature-256`` value, or 401 before any body is read."""
    if not header or not header.startswith("sha256=") or len(header) != 71:
        raise WebhookError(401, "missing or malformed X-Hub-Signature-256")
    return header


class SignatureCheck:
    """The HMAC of a body fed in chunks as it arrives, against every configured secret.

    The body never has to be whole in memory before it is known to be GitHub's.
    """

    def __init__(self, secrets: tuple[str, ...]) -> None:
        if not secrets:
            raise WebhookError(500, "no webhook secret is configured")
        self._macs = [hmac.new(secret.encode(), digestmod=hashlib.sha256) for secret in secrets]

    def update(self, chunk: bytes) -> None:
        for mac in self._macs:
            mac.update(chunk)

    def verify(self, header: str | None) -> None:
        header = check_signature_header(header)
        valid = False
        for mac in self._macs:
            # Compare against every secret, so timing does not reveal which one matched.
            valid |= hmac.compare_digest("sha256=" + mac.hexdigest(), header)
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


def delivery_headers(headers: dict[str, str]) -> tuple[str, str]:
    """(event, guid) of a verified delivery; 400 when either is missing or oversized."""
    event = headers.get("x-github-event")
    guid = headers.get("x-github-delivery")
    if not event or not guid:
        raise WebhookError(400, "missing X-GitHub-Event or X-GitHub-Delivery")
    if len(guid) > MAX_GUID_CHARS:
        raise WebhookError(400, "X-GitHub-Delivery is too long")
    return event, guid


def parse_body(body: bytes, content_type: str | None) -> dict[str, Any]:
    """JSON payload from either content type GitHub can be configured to send.

    Raises :class:`PayloadRejected` for a body that is not a bounded JSON object, and
    :class:`WebhookError` 415 for a content type GitHub never sends.
    """
    media = (content_type or "application/json").split(";")[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        try:
            fields = urllib.parse.parse_qs(body.decode("utf-8", "replace"), max_num_fields=10)
        except ValueError:
            raise PayloadRejected("form body has too many fields") from None
        raw: bytes | str = (fields.get("payload") or [""])[0]
    elif media == "application/json":
        raw = body
    else:
        raise WebhookError(415, f"unsupported content type {media[:100]!r}")
    return load_json(raw)


def _action_of(payload: dict[str, Any]) -> str | None:
    action = payload.get("action")
    return action[:MAX_ACTION_CHARS] if isinstance(action, str) else None


def classify(headers: dict[str, str], body: bytes) -> Delivery:
    """A verified delivery's event, parsed payload and action (headers lower-case).

    Raises :class:`DeliveryRejected` when the payload is not usable JSON.
    """
    event, guid = delivery_headers(headers)
    try:
        payload = parse_body(body, headers.get("content-type"))
    except PayloadRejected as exc:
        raise DeliveryRejected(guid, event, None, str(exc)) from None
    return Delivery(guid, event, _action_of(payload), payload)


def validate(delivery: Delivery) -> None:
    """Check the fields prbot reads from a handled delivery; :class:`DeliveryRejected` if not."""
    try:
        validate_event(delivery.event, delivery.payload)
    except PayloadRejected as exc:
        raise DeliveryRejected(delivery.guid, delivery.event, delivery.action, str(exc)) from None
