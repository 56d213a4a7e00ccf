"""Dispatched GPU jobs, head approvals and full reports, on SQLite and PostgreSQL.

Dispatch is idempotent by construction, as ``bot.github.publish`` effects are: a record is
*claimed* (inserted, or moved from attempt ``n - 1`` to ``n``, in one statement that only
one worker can win) before the engine is called, with a fresh ``dispatch_key`` the build
carries in its meta-data; the build id is written after. A redelivered event sees the claim
and does nothing; a retry after a crash between the two steps finds the claim without a
build id and asks the engine for the build with that key before creating one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from bot.jobs.records import (
    ACTIVE,
    UNDISPATCHED,
    JobKey,
    JobRecord,
    JobSpec,
    pending_build_id,
)
from bot.store.ci_schema import ci_approvals, ci_jobs, ci_reports
from bot.store.db import reading
from bot.store.dialect import upsert
from bot.store.schema import utcnow


def _key_where(key: JobKey) -> sa.ColumnElement[bool]:
    return sa.and_(
        ci_jobs.c.repo == key.repo,
        ci_jobs.c.number == key.number,
        ci_jobs.c.head_sha == key.head_sha,
        ci_jobs.c.name == key.name,
        ci_jobs.c.side == key.side,
    )


def _record(row: sa.Row) -> JobRecord:
    return JobRecord(
        id=row.id,
        key=JobKey(row.repo, row.number, row.head_sha, row.name, row.side),
        commit_sha=row.commit_sha,
        kind=row.kind,
        engine=row.engine,
        hardware=row.hardware,
        step_key=row.step_key,
        spec=dict(row.spec or {}),
        state=row.state,
        attempt=row.attempt,
        dispatch_key=row.dispatch_key,
        build_id=row.build_id,
        build_number=row.build_number,
        build_url=row.build_url,
        job_url=row.job_url,
        results=row.results,
        error=row.error,
        updated_at=row.updated_at,
        signal=dict(row.signal) if row.signal else None,
    )


def _select(where: sa.ColumnElement[bool], engine: sa.Engine) -> list[JobRecord]:
    with reading(engine) as connection:
        rows = connection.execute(sa.select(ci_jobs).where(where).order_by(ci_jobs.c.id)).all()
    return [_record(row) for row in rows]


def records_for_head(engine: sa.Engine, repo: str, number: int, head_sha: str) -> list[JobRecord]:
    """Every record of one PR head, in the order they were first made."""
    return _select(
        sa.and_(ci_jobs.c.repo == repo, ci_jobs.c.number == number, ci_jobs.c.head_sha == head_sha),
        engine,
    )


def records_for_build(engine: sa.Engine, engine_name: str, build_id: str) -> list[JobRecord]:
    return _select(sa.and_(ci_jobs.c.engine == engine_name, ci_jobs.c.build_id == build_id), engine)


def recorded_builds(engine: sa.Engine, engine_name: str, build_ids: list[str]) -> set[str]:
    """Which of ``build_ids`` a record is bound to: the builds prbot made (in chunks, so a
    long list stays within every database's parameter limit)."""
    found: set[str] = set()
    with reading(engine) as connection:
        for start in range(0, len(build_ids), 500):
            chunk = build_ids[start : start + 500]
            rows = connection.execute(
                sa.select(ci_jobs.c.build_id).where(
                    ci_jobs.c.engine == engine_name, ci_jobs.c.build_id.in_(chunk)
                )
            )
            found.update(row.build_id for row in rows)
    return found


def records_for_dispatch(engine: sa.Engine, dispatch_key: str) -> list[JobRecord]:
    return _select(ci_jobs.c.dispatch_key == dispatch_key, engine)


def get_record(engine: sa.Engine, key: JobKey) -> JobRecord | None:
    found = _select(_key_where(key), engine)
    return found[0] if found else None


def note_undispatched(engine: sa.Engine, spec: JobSpec, state: str) -> None:
    """Record a job that is selected or waiting for approval; never touches one dispatched."""
    if state not in UNDISPATCHED:
        raise ValueError(f"not an undispatched state: {state}")
    now = utcnow()
    with engine.begin() as connection:
        statement = upsert(connection, ci_jobs).values(
            **spec.row(), state=state, attempt=0, created_at=now, updated_at=now
        )
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=[
                    ci_jobs.c.repo,
                    ci_jobs.c.number,
                    ci_jobs.c.head_sha,
                    ci_jobs.c.name,
                    ci_jobs.c.side,
                ],
                set_={"state": state, "updated_at": now},
                where=ci_jobs.c.attempt == 0,
            )
        )


def claim(engine: sa.Engine, spec: JobSpec, *, attempt: int, dispatch_key: str) -> bool:
    """Claim attempt ``attempt`` of a job for one dispatch; True for the one caller that wins.

    Attempt 1 of a job never recorded inserts it; otherwise the record moves from attempt
    ``attempt - 1`` only, so two workers (or a redelivery) racing for the same attempt cannot
    both dispatch.
    """
    if attempt < 1:
        raise ValueError("attempts count from 1")
    now = utcnow()
    values = {
        "state": "queued",
        "attempt": attempt,
        "dispatch_key": dispatch_key,
        "build_id": None,
        "build_number": None,
        "build_url": None,
        "job_url": None,
        "results": None,
        "error": None,
        "signal": None,
        "updated_at": now,
    }
    with engine.begin() as connection:
        if attempt == 1:
            inserted = connection.execute(
                upsert(connection, ci_jobs)
                .values(**spec.row(), **values, created_at=now)
                .on_conflict_do_nothing()
                .returning(ci_jobs.c.id)
            ).scalar_one_or_none()
            if inserted is not None:
                return True
        moved = connection.execute(
            sa.update(ci_jobs)
            .where(_key_where(spec.key), ci_jobs.c.attempt == attempt - 1)
            .values(**values, commit_sha=spec.commit_sha, spec=spec.spec, step_key=spec.step_key)
        ).rowcount
        return moved == 1


def record_build(
    engine: sa.Engine,
    dispatch_key: str,
    *,
    engine_name: str,
    build_id: str,
    build_number: int | None,
    build_url: str,
) -> int:
    """Bind a dispatch's claimed records to the build it made; how many were updated.

    A record is bound once: only while it has no build, or the pending stand-in of its own
    key, or already this one. A build that later claims the same key (a run named like
    prbot's, a build whose meta-data a PR set) never takes the record over.
    """
    with engine.begin() as connection:
        return connection.execute(
            sa.update(ci_jobs)
            .where(
                ci_jobs.c.dispatch_key == dispatch_key,
                ci_jobs.c.engine == engine_name,
                sa.or_(
                    ci_jobs.c.build_id.is_(None),
                    ci_jobs.c.build_id.in_([pending_build_id(dispatch_key), build_id]),
                ),
            )
            .values(
                build_id=build_id,
                build_number=build_number,
                build_url=build_url,
                updated_at=utcnow(),
            )
        ).rowcount


def fail_dispatch(
    engine: sa.Engine, dispatch_key: str, error: str, *, state: str = "failed"
) -> int:
    """The engine refused the build (or it was never started): the claimed records end in
    ``state`` with the one-line reason."""
    with engine.begin() as connection:
        return connection.execute(
            sa.update(ci_jobs)
            .where(ci_jobs.c.dispatch_key == dispatch_key, ci_jobs.c.build_id.is_(None))
            .values(state=state, error=error[:500], updated_at=utcnow())
        ).rowcount


def update_result(
    engine: sa.Engine,
    record: JobRecord,
    *,
    state: str,
    job_url: str | None = None,
    results: list[dict[str, float]] | None = None,
    error: str | None = None,
) -> bool:
    """Store what the engine says about a record's job, only for the dispatch it knows of.

    A late webhook of an older attempt (the job was re-dispatched since) changes nothing;
    nor does one that would move a finished job back to running.
    """
    condition = [ci_jobs.c.id == record.id, ci_jobs.c.dispatch_key == record.dispatch_key]
    if state in ACTIVE:
        condition.append(ci_jobs.c.state.in_(ACTIVE))
    values: dict[str, Any] = {"state": state, "updated_at": utcnow()}
    if job_url is not None:
        values["job_url"] = job_url
    if results is not None:
        values["results"] = results
    if error is not None:
        values["error"] = error[:500]
    with engine.begin() as connection:
        updated = connection.execute(sa.update(ci_jobs).where(*condition).values(**values))
        return updated.rowcount == 1


def set_signal(engine: sa.Engine, record: JobRecord, signal: dict[str, Any]) -> bool:
    """Keep a finished job's classification (a failure's, or a pass after prbot's retry),
    for the dispatch the record is at."""
    with engine.begin() as connection:
        return (
            connection.execute(
                sa.update(ci_jobs)
                .where(
                    ci_jobs.c.id == record.id,
                    ci_jobs.c.dispatch_key == record.dispatch_key,
                    ci_jobs.c.state.in_(("failed", "timed_out", "passed")),
                )
                .values(signal=signal, updated_at=utcnow())
            ).rowcount
            == 1
        )


def reopen_for_retry(engine: sa.Engine, record: JobRecord, *, job_url: str | None) -> bool:
    """A failed job retried on its build (the same commit): running again, its new attempt's
    link, no classification until that attempt ends. Only from failed or timed out."""
    values: dict[str, Any] = {"state": "running", "signal": None, "updated_at": utcnow()}
    if job_url:
        values["job_url"] = job_url
    with engine.begin() as connection:
        return (
            connection.execute(
                sa.update(ci_jobs)
                .where(
                    ci_jobs.c.id == record.id,
                    ci_jobs.c.dispatch_key == record.dispatch_key,
                    ci_jobs.c.state.in_(("failed", "timed_out")),
                )
                .values(**values)
            ).rowcount
            == 1
        )


def base_results(
    engine: sa.Engine, repo: str, name: str, commit_sha: str, spec: dict[str, Any]
) -> JobRecord | None:
    """The latest passed run with results of this benchmark on ``commit_sha`` (any PR's, on
    either side), measuring the same configuration and backends: a base that need not be
    dispatched again."""
    candidates = _select(
        sa.and_(
            ci_jobs.c.repo == repo,
            ci_jobs.c.name == name,
            ci_jobs.c.commit_sha == commit_sha,
            ci_jobs.c.state == "passed",
        ),
        engine,
    )
    same = [
        r
        for r in candidates
        if r.results
        and r.spec.get("config") == spec.get("config")
        and r.spec.get("backends") == spec.get("backends")
        and r.spec.get("runs") == spec.get("runs")
    ]
    return max(same, key=lambda r: r.updated_at) if same else None


# --- approvals ---------------------------------------------------------------------------


def approve(
    engine: sa.Engine, repo: str, number: int, head_sha: str, approver: str, source: str
) -> bool:
    """Record ``approver``'s approval of that head; False when they had approved it already."""
    with engine.begin() as connection:
        inserted = connection.execute(
            upsert(connection, ci_approvals)
            .values(
                repo=repo,
                number=number,
                head_sha=head_sha,
                approver=approver,
                source=source[:200],
                created_at=utcnow(),
            )
            .on_conflict_do_nothing()
            .returning(ci_approvals.c.approver)
        ).scalar_one_or_none()
    return inserted is not None


def approvers(engine: sa.Engine, repo: str, number: int, head_sha: str) -> list[str]:
    """Who approved GPU jobs for exactly this head (a push makes a head nobody approved)."""
    with reading(engine) as connection:
        return list(
            connection.execute(
                sa.select(ci_approvals.c.approver)
                .where(
                    ci_approvals.c.repo == repo,
                    ci_approvals.c.number == number,
                    ci_approvals.c.head_sha == head_sha,
                )
                .order_by(ci_approvals.c.created_at, ci_approvals.c.approver)
            ).scalars()
        )


# --- full reports ------------------------------------------------------------------------


def save_full_report(
    engine: sa.Engine,
    repo: str,
    number: int,
    head_sha: str,
    report: dict[str, Any],
    context: dict[str, Any],
) -> None:
    """Keep a head's whole report (sections with their data) and where to publish it."""
    now = utcnow()
    with engine.begin() as connection:
        statement = upsert(connection, ci_reports).values(
            repo=repo,
            number=number,
            head_sha=head_sha,
            report=report,
            context=context,
            created_at=now,
            updated_at=now,
        )
        new = statement.excluded
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=[ci_reports.c.repo, ci_reports.c.number, ci_reports.c.head_sha],
                set_={"report": new.report, "context": new.context, "updated_at": new.updated_at},
            )
        )


def heads_with_report(
    engine: sa.Engine, head_sha: str, *, repo: str | None = None, limit: int = 10
) -> list[tuple[str, int]]:
    """``(repo, number)`` of each PR prbot kept a report for at that head, in ``repo`` or
    any repository (a Buildkite build names its commit only); a commit is rarely the head
    of more than one."""
    where = ci_reports.c.head_sha == head_sha
    if repo is not None:
        where = sa.and_(ci_reports.c.repo == repo, where)
    with reading(engine) as connection:
        rows = connection.execute(
            sa.select(ci_reports.c.repo, ci_reports.c.number)
            .where(where)
            .order_by(ci_reports.c.repo, ci_reports.c.number)
            .limit(limit)
        )
        return [(str(found), int(number)) for found, number in rows]


def report_first_kept(engine: sa.Engine, repo: str, number: int, head_sha: str) -> datetime | None:
    """When prbot first kept a report for that head (None: never)."""
    with reading(engine) as connection:
        return connection.execute(
            sa.select(ci_reports.c.created_at).where(
                ci_reports.c.repo == repo,
                ci_reports.c.number == number,
                ci_reports.c.head_sha == head_sha,
            )
        ).scalar_one_or_none()


def load_full_report(
    engine: sa.Engine, repo: str, number: int, head_sha: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(report, context)`` as saved for that head, or None."""
    with reading(engine) as connection:
        row = connection.execute(
            sa.select(ci_reports.c.report, ci_reports.c.context).where(
                ci_reports.c.repo == repo,
                ci_reports.c.number == number,
                ci_reports.c.head_sha == head_sha,
            )
        ).first()
    return (dict(row.report), dict(row.context)) if row is not None else None
