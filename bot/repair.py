"""Missed-delivery repair, the I/O around bot/deliveries_repair.py: list the App's recent
webhook attempts, redeliver those prbot lost, and queue open PRs whose report is for an
older head. Runs as the ``repair_deliveries`` job: when a worker starts, then every
``PRBOT_REPAIR_INTERVAL`` seconds.

The walk is bounded (``MAX_PAGES`` pages of 100) and conditional: the first page is asked
with the ETag of the last run, so a quiet App costs one 304 per run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from github import GithubException

from bot.deliveries_repair import (
    HookAttempt,
    StaleHead,
    choose_redeliveries,
    next_page_url,
    parse_attempts,
    stale_heads,
    walk_should_stop,
)
from bot.store.db import reading
from bot.store.schema import deliveries, jobs, open_prs, reports
from bot.webhooks import HANDLED_ACTIONS

log = logging.getLogger(__name__)

JOB_KIND = "repair_deliveries"
DEDUPE_KEY = "repair_deliveries"
MAX_PAGES = 30
MAX_REDELIVERIES_PER_RUN = 500
MAX_STALE_PER_RUN = 100
GUID_CHUNK = 500
# Each later run walks back to where the one before started, with this much overlap.
OVERLAP = timedelta(minutes=10)


@dataclass
class RepairResult:
    pages: int = 0
    not_modified: bool = False
    attempts: int = 0
    redelivered: list[str] = field(default_factory=list)  # GUIDs
    redeliver_failures: int = 0
    stale: list[StaleHead] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.pages} page(s){' (not modified)' if self.not_modified else ''}, "
            f"{self.attempts} attempts, {len(self.redelivered)} redelivered, "
            f"{self.redeliver_failures} refused, {len(self.stale)} stale head(s) queued"
        )


def stored_guids(engine: sa.Engine, guids: list[str]) -> set[str]:
    found: set[str] = set()
    with reading(engine) as connection:
        for start in range(0, len(guids), GUID_CHUNK):
            chunk = guids[start : start + GUID_CHUNK]
            rows = connection.execute(
                sa.select(deliveries.c.guid).where(deliveries.c.guid.in_(chunk))
            )
            found.update(row.guid for row in rows)
    return found


def walk_attempts(app: Any, state: dict[str, Any], now: datetime) -> tuple[list, dict, int, bool]:
    """(attempts, the next run's state, pages read, first page unchanged)."""
    since = _time(state.get("since"))
    first = app.hook_deliveries(etag=state.get("etag"))
    next_state = {"since": (now - OVERLAP).isoformat(), "etag": state.get("etag")}
    if first.status == 304:
        return [], next_state, 1, True
    next_state["etag"] = first.etag
    attempts: list[HookAttempt] = []
    page, pages = first, 1
    while True:
        found = parse_attempts(_json(page.body))
        attempts += found
        url = next_page_url(page.link)
        if url is None or pages >= MAX_PAGES or walk_should_stop(found, since=since, now=now):
            break
        page, pages = app.hook_deliveries(url=url), pages + 1
    return attempts, next_state, pages, False


def repair_deliveries(
    engine: sa.Engine,
    app: Any,
    state: dict[str, Any],
    *,
    now: datetime | None = None,
) -> tuple[RepairResult, dict[str, Any]]:
    """Redeliver what prbot lost since the last run; (what was done, the next run's state)."""
    now = now or datetime.now(UTC)
    result = RepairResult()
    attempts, next_state, result.pages, result.not_modified = walk_attempts(app, state, now)
    result.attempts = len(attempts)
    if not attempts:
        return result, next_state
    stored = stored_guids(engine, sorted({a.guid for a in attempts}))
    chosen = choose_redeliveries(attempts, stored, HANDLED_ACTIONS, now=now)
    for attempt in chosen[:MAX_REDELIVERIES_PER_RUN]:
        try:
            app.redeliver(attempt.id)
        except GithubException as exc:  # e.g. 422 once GitHub considers it too old
            result.redeliver_failures += 1
            log.warning("redelivery of %s refused: HTTP %s", attempt.guid, exc.status)
            continue
        result.redelivered.append(attempt.guid)
    if len(chosen) > MAX_REDELIVERIES_PER_RUN:
        # The rest next run: walk from this run's floor again rather than move past them.
        next_state["since"] = state.get("since")
        next_state["etag"] = None
    return result, next_state


def sweep_stale_heads(
    engine: sa.Engine,
    enqueue_pipeline: Callable[..., int],
    *,
    limit: int = MAX_STALE_PER_RUN,
) -> list[StaleHead]:
    """Queue a run for every open PR whose latest report is for an older head."""
    with reading(engine) as connection:
        open_heads = {
            (row.repo, row.number): row.head_sha
            for row in connection.execute(
                sa.select(open_prs.c.repo, open_prs.c.number, open_prs.c.head_sha).where(
                    open_prs.c.state == "open"
                )
            )
        }
        newest = (
            sa.select(sa.func.max(reports.c.id))
            .group_by(reports.c.repo, reports.c.number)
            .scalar_subquery()
        )
        reported = {
            (row.repo, row.number): row.head_sha
            for row in connection.execute(
                sa.select(reports.c.repo, reports.c.number, reports.c.head_sha).where(
                    reports.c.id.in_(newest)
                )
            )
        }
        busy_keys = connection.execute(
            sa.select(jobs.c.dedupe_key).where(
                jobs.c.kind == "pipeline", jobs.c.state.in_(("queued", "leased"))
            )
        ).scalars()
        busy = {_pipeline_key(key) for key in busy_keys if key}
    queued = []
    for stale in stale_heads(open_heads, reported, busy, limit=limit):
        payload = _latest_event_payload(engine, stale.repo)
        if payload is None:
            log.warning("no stored event for %s; cannot queue #%s", stale.repo, stale.number)
            continue
        enqueue_pipeline(
            payload,
            None,
            number=stale.number,
            reason=f"repair: report is for {stale.reported_head[:12]}",
        )
        queued.append(stale)
    return queued


def _pipeline_key(key: str) -> tuple[str, int] | None:
    # "pipeline:<owner>/<repo>#<number>", as the worker writes it.
    repo, _, number = key.removeprefix("pipeline:").rpartition("#")
    return (repo, int(number)) if number.isdigit() else None


def _latest_event_payload(engine: sa.Engine, repo: str) -> dict[str, Any] | None:
    """The repository and installation as the last stored event of ``repo`` named them."""
    with reading(engine) as connection:
        body = connection.execute(
            sa.select(deliveries.c.body)
            .where(deliveries.c.repo == repo, deliveries.c.status == "accepted")
            .order_by(deliveries.c.id.desc())
            .limit(1)
        ).scalar_one_or_none()
    data = _json(body)
    if not isinstance(data, dict) or not isinstance(data.get("repository"), dict):
        return None
    return {"repository": data["repository"], "installation": data.get("installation") or {}}


def _json(body: Any) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
