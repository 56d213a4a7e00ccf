"""Buildkite's webhook deliveries as data: authenticity and the fields prbot uses, no I/O.

Buildkite proves a delivery one of two ways, chosen in its webhook settings:

- ``X-Buildkite-Token``: the token itself, compared in constant time;
- ``X-Buildkite-Signature: timestamp=T,signature=S`` where ``S`` is the hex HMAC-SHA256 of
  ``"T.body"`` under the token. ``T`` is refused when older (or newer) than ``max_age``
  seconds, so a captured delivery cannot be replayed later.

A token-mode delivery has no timestamp of its own, so the times its build and job carry
stand in (:func:`check_token_delivery_age`): news older than ``max_age`` is a replay.
Within that window a replay is the same news again, a duplicate by its dedupe key.

Either way the request carries ``X-Buildkite-Event`` (``job.finished``, ``build.finished``,
``ping``, …); deduplication uses the build and job ids, since Buildkite sends no delivery id.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

HANDLED_EVENTS = frozenset({"job.finished", "build.finished", "build.running", "job.started"})
DEFAULT_MAX_AGE = 300.0
# Unix seconds have 10 digits until the year 2286.
MAX_TIMESTAMP_DIGITS = 12


class BuildkiteWebhookError(ValueError):
    """A delivery to refuse; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def sign(body: bytes, token: str, timestamp: int) -> str:
    """The ``X-Buildkite-Signature`` value Buildkite would send (for tests and replays)."""
    digest = hmac.new(token.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"timestamp={timestamp},signature={digest.hexdigest()}"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lowered), None)


def verify(
    headers: Mapping[str, str],
    body: bytes,
    tokens: tuple[str, ...],
    *,
    now: float | None = None,
    max_age: float = DEFAULT_MAX_AGE,
) -> None:
    """Raise :class:`BuildkiteWebhookError` (401) unless a configured token proves ``body``;
    never anything else, whatever the headers hold."""
    if not tokens:
        raise BuildkiteWebhookError(401, "no Buildkite webhook token is configured")
    signature = _header(headers, "X-Buildkite-Signature")
    if signature is not None:
        parts = dict(
            part.strip().split("=", 1) for part in signature.split(",") if "=" in part.strip()
        )
        stamp, given = parts.get("timestamp", ""), parts.get("signature", "")
        # ASCII digits only, and few: "²".isdigit() is true but int() refuses it, and 400
        # digits overflow the float of the age check (both were 500s).
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= MAX_TIMESTAMP_DIGITS):
            raise BuildkiteWebhookError(401, "malformed X-Buildkite-Signature")
        if not given:
            raise BuildkiteWebhookError(401, "malformed X-Buildkite-Signature")
        current = time.time() if now is None else now
        if abs(current - int(stamp)) > max_age:
            raise BuildkiteWebhookError(401, "X-Buildkite-Signature timestamp is stale")
        valid = False
        for token in tokens:
            expected = sign(body, token, int(stamp)).rsplit("=", 1)[1]
            # Bytes: compare_digest refuses str with non-ASCII characters (a TypeError).
            valid |= hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))
        if not valid:
            raise BuildkiteWebhookError(401, "X-Buildkite-Signature does not match")
        return
    token = _header(headers, "X-Buildkite-Token")
    if token is None:
        raise BuildkiteWebhookError(401, "no X-Buildkite-Token or X-Buildkite-Signature")
    valid = False
    for expected in tokens:
        valid |= hmac.compare_digest(expected.encode(), token.encode("utf-8", "replace"))
    if not valid:
        raise BuildkiteWebhookError(401, "X-Buildkite-Token does not match")


@dataclass(frozen=True)
class BuildkiteEvent:
    event: str
    build_id: str
    build_number: int | None
    build_state: str | None
    blocked: bool
    meta_data: dict[str, str]
    job_id: str | None = None
    job_state: str | None = None
    step_key: str | None = None
    web_url: str | None = None
    # The latest time the build or job says (created, scheduled, started, finished), epoch
    # seconds: how old the news is, where no signature carries a timestamp.
    happened_at: float | None = None

    @property
    def dedupe_key(self) -> str:
        """Unique per event and object state: a redelivery maps to the same key."""
        state = self.job_state if self.job_id else self.build_state
        return f"buildkite:{self.event}:{self.job_id or self.build_id}:{state}"


def parse_event(headers: Mapping[str, str], body: bytes) -> BuildkiteEvent | None:
    """The event, or None for one prbot ignores (``ping``); 400 for a malformed one."""
    event = _header(headers, "X-Buildkite-Event") or ""
    if event not in HANDLED_EVENTS:
        return None
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise BuildkiteWebhookError(400, "body is not JSON") from None
    build = data.get("build") if isinstance(data, dict) else None
    if not isinstance(build, dict) or not isinstance(build.get("id"), str):
        raise BuildkiteWebhookError(400, f"{event} without a build id")
    job = data.get("job") if isinstance(data.get("job"), dict) else None
    meta = build.get("meta_data") if isinstance(build.get("meta_data"), dict) else {}
    number = build.get("number")
    return BuildkiteEvent(
        event=event,
        build_id=build["id"],
        build_number=number if isinstance(number, int) and not isinstance(number, bool) else None,
        build_state=str(build["state"]) if isinstance(build.get("state"), str) else None,
        blocked=build.get("blocked") is True,
        meta_data={str(k): str(v) for k, v in meta.items()},
        job_id=str(job["id"]) if job and isinstance(job.get("id"), str) else None,
        job_state=str(job["state"]) if job and isinstance(job.get("state"), str) else None,
        step_key=str(job["step_key"]) if job and isinstance(job.get("step_key"), str) else None,
        web_url=str(build["web_url"]) if isinstance(build.get("web_url"), str) else None,
        happened_at=_latest_time(build, job or {}),
    )


TIME_FIELDS = ("created_at", "scheduled_at", "runnable_at", "started_at", "finished_at")


def _latest_time(*objects: Mapping[str, object]) -> float | None:
    """The latest ISO 8601 time among the objects' time fields (None when none parses)."""
    found = []
    for item in objects:
        for name in TIME_FIELDS:
            value = item.get(name)
            if not isinstance(value, str) or len(value) > 40:
                continue
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                continue
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            found.append(moment.timestamp())
    return max(found) if found else None


def check_token_delivery_age(
    event: BuildkiteEvent, *, now: float | None = None, max_age: float = DEFAULT_MAX_AGE
) -> None:
    """Raise :class:`BuildkiteWebhookError` (401) for a token-mode delivery whose news is not
    within ``max_age`` of now: with no signed timestamp, the build's and job's own times are
    what bound a replay. (A signed delivery's timestamp is checked in :func:`verify`.)"""
    if event.happened_at is None:
        raise BuildkiteWebhookError(401, "X-Buildkite-Token delivery carries no build time")
    current = time.time() if now is None else now
    if abs(current - event.happened_at) > max_age:
        raise BuildkiteWebhookError(
            401, f"X-Buildkite-Token delivery is about news more than {max_age:g} s old"
        )
