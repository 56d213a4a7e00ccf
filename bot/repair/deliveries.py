"""Missed deliveries, as decisions over data (no I/O): which of the App's recent webhook
attempts to redeliver (which open PR heads to run again: bot/repair/head_sweeps.py).

GitHub lists every attempt of the App's webhook (``GET /app/hook/deliveries``, newest first,
cursor-paginated) with its GUID and the status code prbot answered. A GUID none of whose
attempts got a 2xx and that prbot never stored was lost (prbot down, a 5xx, a timeout); one
``POST /app/hook/deliveries/{id}/attempts`` sends it again with the same GUID, and the
intake's unique GUID makes a redelivery that races an earlier success a no-op.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

# GitHub redelivers attempts of the past three days; an hour's margin for clocks and queues.
REDELIVERY_WINDOW = timedelta(days=3) - timedelta(hours=1)
# Our own redeliveries of one GUID that may fail before we stop asking (a payload the intake
# refuses with a 5xx every time must not be resent forever).
MAX_REDELIVERIES = 3
MAX_GUID_CHARS = 100
_NEXT_LINK = re.compile(r'<([^<>]+)>\s*;\s*rel="next"')


@dataclass(frozen=True)
class HookAttempt:
    id: int
    guid: str
    event: str
    action: str | None
    status_code: int
    delivered_at: datetime
    redelivery: bool

    @property
    def succeeded(self) -> bool:
        return 200 <= self.status_code < 300


def parse_attempts(items: Any) -> list[HookAttempt]:
    """The attempts of one listing page; entries without the fields used are skipped."""
    if not isinstance(items, list):
        return []
    attempts = []
    for item in items:
        if not isinstance(item, dict):
            continue
        id_, guid, event = item.get("id"), item.get("guid"), item.get("event")
        status_code = item.get("status_code")
        if not (
            isinstance(id_, int)
            and isinstance(guid, str)
            and 0 < len(guid) <= MAX_GUID_CHARS
            and isinstance(event, str)
            and isinstance(status_code, int)
        ):
            continue
        delivered = _parse_time(item.get("delivered_at"))
        if delivered is None:
            continue
        action = item.get("action")
        attempts.append(
            HookAttempt(
                id=id_,
                guid=guid,
                event=event,
                action=action if isinstance(action, str) else None,
                status_code=status_code,
                delivered_at=delivered,
                redelivery=item.get("redelivery") is True,
            )
        )
    return attempts


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def next_page_url(link_header: str | None) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (the cursor is inside it)."""
    if not link_header:
        return None
    found = _NEXT_LINK.search(link_header)
    return found.group(1) if found else None


def handled(event: str, action: str | None, actions: Mapping[str, frozenset[str] | None]) -> bool:
    """Whether the intake stores this event and action (the rest it drops unstored)."""
    if event not in actions:
        return False
    wanted = actions[event]
    return wanted is None or action in wanted


def choose_redeliveries(
    attempts: Iterable[HookAttempt],
    stored_guids: set[str],
    actions: Mapping[str, frozenset[str] | None],
    *,
    now: datetime,
    window: timedelta = REDELIVERY_WINDOW,
    max_redeliveries: int = MAX_REDELIVERIES,
) -> list[HookAttempt]:
    """The newest attempt of every lost GUID, oldest GUID first (so order is kept)."""
    by_guid: dict[str, list[HookAttempt]] = {}
    for attempt in attempts:
        by_guid.setdefault(attempt.guid, []).append(attempt)
    chosen = []
    for guid, tries in by_guid.items():
        newest = max(tries, key=lambda a: a.id)
        if guid in stored_guids or any(a.succeeded for a in tries):
            continue
        if not handled(newest.event, newest.action, actions):
            continue  # prbot would drop it unstored anyway
        if now - newest.delivered_at > window:
            continue  # GitHub no longer redelivers it
        if sum(a.redelivery for a in tries) >= max_redeliveries:
            continue
        chosen.append(newest)
    return sorted(chosen, key=lambda a: min(t.id for t in by_guid[a.guid]))


def walk_should_stop(page: list[HookAttempt], *, since: datetime | None, now: datetime) -> bool:
    """Stop paging once a page reaches attempts older than ``since`` (or the window)."""
    if not page:
        return True
    oldest = min(a.delivered_at for a in page)
    floor = now - REDELIVERY_WINDOW
    if since is not None and since > floor:
        floor = since
    return oldest < floor
