"""Missed-delivery repair, the I/O around bot/repair/deliveries.py: list the App's recent
webhook attempts, redeliver those prbot lost, and queue open PRs whose current head has no
report (bot/repair/head_sweeps.py decides which, and when to publish that the run failed instead).
Runs as the ``repair_deliveries`` job: when a worker starts, then every
``PRBOT_REPAIR_INTERVAL`` seconds.

The walk is bounded (``MAX_PAGES`` pages of 100) and conditional: the first page is asked
with the ETag of the last run, so a quiet App costs one 304 per run.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import sqlalchemy as sa
from github import GithubException

from bot.checks import Section, Status
from bot.events.webhooks import HANDLED_ACTIONS
from bot.repair.deliveries import (
    HookAttempt,
    choose_redeliveries,
    next_page_url,
    parse_attempts,
    walk_should_stop,
)
from bot.repair.head_sweeps import MAX_SWEEPS, HeadToSweep, plan_sweeps
from bot.report.render import Report, render_markdown
from bot.store.db import reading
from bot.store.schema import deliveries
from bot.store.state import save_report
from bot.store.sweeps import (
    forget_sweeps,
    last_pipeline_error,
    record_gave_up,
    record_sweep,
    sweep_inputs,
)

log = logging.getLogger(__name__)

JOB_KIND = "repair_deliveries"
DEDUPE_KEY = "repair_deliveries"
MAX_PAGES = 30
MAX_REDELIVERIES_PER_RUN = 500
MAX_STALE_PER_RUN = 100
GUID_CHUNK = 500
# Sweep counts older than this are dropped (heads long closed or moved on).
SWEEP_RETENTION = timedelta(days=30)
# Each later run walks back to where the one before started, with this much overlap.
OVERLAP = timedelta(minutes=10)
# The section of the report a head gets when every run of it failed.
FAILURE_CHECK = "run"
# "TimeoutError: ..." -> "TimeoutError": only the exception's name goes on the PR, since
# its message may carry paths or URLs the PR's readers should not see.
_ERROR_KIND = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,99}(?=:|$)")


class FailurePublisher(Protocol):
    def __call__(self, payload: dict[str, Any], report: Report, markdown: str) -> bool: ...


@dataclass
class SweepResult:
    queued: list[HeadToSweep] = field(default_factory=list)
    gave_up: list[HeadToSweep] = field(default_factory=list)


@dataclass
class RepairResult:
    pages: int = 0
    not_modified: bool = False
    attempts: int = 0
    redelivered: list[str] = field(default_factory=list)  # GUIDs
    redeliver_failures: int = 0
    sweep: SweepResult = field(default_factory=SweepResult)

    def summary(self) -> str:
        return (
            f"{self.pages} page(s){' (not modified)' if self.not_modified else ''}, "
            f"{self.attempts} attempts, {len(self.redelivered)} redelivered, "
            f"{self.redeliver_failures} refused, {len(self.sweep.queued)} head(s) without "
            f"a current report queued, {len(self.sweep.gave_up)} given up"
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


def sweep_heads(
    engine: sa.Engine,
    enqueue_pipeline: Callable[..., int],
    publish_failure: FailurePublisher | None,
    *,
    spacing: timedelta,
    now: datetime | None = None,
    limit: int = MAX_STALE_PER_RUN,
    max_sweeps: int = MAX_SWEEPS,
) -> SweepResult:
    """Queue a run for every open PR whose current head has no report (its latest is for an
    older head, or it has none: the event was lost, or its job died), at most ``max_sweeps``
    times per head with growing spacing; then publish that the run failed.

    ``publish_failure`` posts the failure report (the sticky comment and check run) and says
    whether it was published; None in a dry run, where the report is only stored.
    """
    now = now or datetime.now(UTC)
    forget_sweeps(engine, now - SWEEP_RETENTION)
    inputs = sweep_inputs(engine)
    plan = plan_sweeps(
        inputs.open_heads,
        inputs.reported_heads,
        inputs.busy,
        inputs.records,
        now=now,
        spacing=spacing,
        max_sweeps=max_sweeps,
        limit=limit,
    )
    result = SweepResult()
    for target in plan.queue:
        payload = _latest_event_payload(engine, target.repo)
        if payload is None:
            log.warning("no stored event for %s; cannot queue #%s", target.repo, target.number)
            continue
        # Counted first: a crash between the two loses a sweep, never the bound.
        record_sweep(engine, target.repo, target.number, target.current_head, now)
        enqueue_pipeline(payload, None, number=target.number, reason=target.reason)
        result.queued.append(target)
    for target in plan.give_up:
        payload = _latest_event_payload(engine, target.repo)
        if payload is None:
            log.warning("no stored event for %s; cannot report #%s", target.repo, target.number)
            continue
        try:
            _give_up(engine, target, payload, publish_failure, now)
        except GithubException as exc:  # the next run tries again
            log.warning(
                "failure report for %s#%s refused: HTTP %s", target.repo, target.number, exc.status
            )
            continue
        result.gave_up.append(target)
    return result


def _give_up(
    engine: sa.Engine,
    target: HeadToSweep,
    payload: dict[str, Any],
    publish_failure: FailurePublisher | None,
    now: datetime,
) -> None:
    error = last_pipeline_error(engine, target.repo, target.number)
    report = failure_report(target, error)
    markdown = render_markdown(report)  # one section without details: no links to base
    published = publish_failure is None or publish_failure(payload, report, markdown)
    if published:
        # Stored like any report: the PR's latest report is for its head, so no sweep
        # queues it again, and a /recheck replaces it.
        save_report(
            engine,
            target.repo,
            target.number,
            target.current_head,
            str(report.status),
            report.to_json(),
            markdown,
        )
    else:
        log.info(
            "%s#%s: failure report not published (a newer head, or no installation)",
            target.repo,
            target.number,
        )
    record_gave_up(engine, target.repo, target.number, target.current_head, now)


def failure_report(target: HeadToSweep, last_error: str | None) -> Report:
    """The report a head gets when every run of it failed: one error section saying so."""
    kind = _ERROR_KIND.match(last_error or "")
    cause = f", the last with {kind.group(0)}" if kind else ""
    summary = (
        f"prbot could not check this head: its runs failed{cause}, "
        f"also after {target.sweeps} repair re-runs. Comment /recheck to run it again; "
        "the error is on its dead job (prbot queue list)."
    )
    section = Section(check=FAILURE_CHECK, status=Status.ERROR, summary=summary)
    return Report(target.repo, target.number, target.current_head, "", [section])


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
