"""A durable job queue with leases, retries with backoff, dead letters and coalescing.

A worker leases a job, works, then completes or fails it. A lease has a token and an expiry:
a crashed worker's job is leased again once the expiry passes, and the old worker's late
``complete()`` is refused because its token no longer matches. Postgres replicas lease with
``FOR UPDATE SKIP LOCKED``; SQLite serialises writers with ``BEGIN IMMEDIATE``. Either way no
two workers hold the same job.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from bot.store.db import reading
from bot.store.dialect import upsert
from bot.store.schema import JOB_STATES, jobs, utcnow

# Tracebacks can be long; the queue keeps enough to diagnose, not a log file.
MAX_ERROR_CHARS = 8000

# Matches the predicate of the partial unique index ux_jobs_dedupe_queued. It must be literal
# SQL: Postgres can only pick a partial index for ON CONFLICT when it can prove the predicate,
# which it cannot through a bound parameter.
QUEUED_PREDICATE = sa.text("state = 'queued'")

# Built once, values passed as parameters: enqueueing sits on the webhook's hot path.
INSERT_JOB = sa.insert(jobs).returning(jobs.c.id)


@dataclass
class Job:
    """One job as a worker sees it. ``lease_token`` is empty when the job is not leased."""

    id: int
    kind: str
    payload: dict
    attempts: int
    created_at: datetime
    lease_token: str
    dedupe_key: str | None
    last_error: str | None
    state: str = "queued"
    run_after: datetime | None = None
    leased_by: str | None = None


def _job(row: sa.Row) -> Job:
    return Job(
        id=row.id,
        kind=row.kind,
        payload=row.payload,
        attempts=row.attempts,
        created_at=row.created_at,
        lease_token=row.lease_token or "",
        dedupe_key=row.dedupe_key,
        last_error=row.last_error,
        state=row.state,
        run_after=row.run_after,
        leased_by=row.leased_by,
    )


def enqueue_job(
    connection: sa.Connection,
    kind: str,
    payload: dict[str, Any],
    *,
    dedupe_key: str | None = None,
    run_after: datetime,
    now: datetime,
) -> int:
    """Insert a job on an open connection (inside the caller's transaction); returns its id.

    With ``dedupe_key``, a job with that key that is still queued takes the new payload
    instead (its place in line kept, or moved earlier), and its id is returned.
    """
    values = {
        "kind": kind,
        "payload": payload,
        "state": "queued",
        "dedupe_key": dedupe_key,
        "attempts": 0,
        "run_after": run_after,
        "created_at": now,
        "updated_at": now,
    }
    if dedupe_key is None:
        return connection.execute(INSERT_JOB, values).scalar_one()
    statement = upsert(connection, jobs).values(values)
    new = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=[jobs.c.dedupe_key],
        index_where=QUEUED_PREDICATE,
        set_={
            "kind": new.kind,
            "payload": new.payload,
            # New work deserves its full set of attempts, and the earlier of the two times.
            "attempts": 0,
            "last_error": None,
            "run_after": sa.case(
                (new.run_after < jobs.c.run_after, new.run_after), else_=jobs.c.run_after
            ),
            "updated_at": new.updated_at,
        },
    )
    return connection.execute(statement.returning(jobs.c.id)).scalar_one()


class Queue:
    """The job queue over one engine. Safe to share between threads."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        lease_seconds: float = 300,
        max_attempts: int = 5,
        backoff_seconds: float = 5,
        backoff_cap_seconds: float = 600,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.engine = engine
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self.backoff_cap_seconds = backoff_cap_seconds
        # Injected so tests can move time forward instead of sleeping.
        self.clock = clock

    def enqueue(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        dedupe_key: str | None = None,
        delay_seconds: float = 0,
        connection: sa.Connection | None = None,
    ) -> int:
        """Add a job (or coalesce into the queued one with the same ``dedupe_key``)."""
        now = self.clock()
        run_after = now + timedelta(seconds=delay_seconds)
        if connection is not None:
            return enqueue_job(
                connection, kind, payload, dedupe_key=dedupe_key, run_after=run_after, now=now
            )
        with self.engine.begin() as own:
            return enqueue_job(
                own, kind, payload, dedupe_key=dedupe_key, run_after=run_after, now=now
            )

    def lease(self, worker_id: str) -> Job | None:
        """Take the oldest runnable job for ``worker_id``, or None when there is none.

        Runnable: queued and due, or leased with an expired lease. A job that has used up its
        attempts goes to the dead letters instead.
        """
        now = self.clock()
        columns = (jobs.c.id, jobs.c.attempts, jobs.c.last_error, jobs.c.leased_by)
        # Two picks rather than one OR: each walks ix_jobs_state_run_after in order and stops
        # at the first row, where an OR makes the database sort the whole backlog per lease.
        # Expired leases go first; they are the oldest work there is.
        picks = [
            sa.select(*columns).where(jobs.c.state == state, condition)
            .order_by(jobs.c.run_after, jobs.c.id)
            .limit(1)
            .with_for_update(skip_locked=True)
            for state, condition in (
                ("leased", jobs.c.lease_expires_at <= now),
                ("queued", jobs.c.run_after <= now),
            )
        ]  # fmt: skip
        with self.engine.begin() as connection:
            while True:
                candidate = None
                for pick in picks:
                    if (candidate := connection.execute(pick).first()) is not None:
                        break
                if candidate is None:
                    return None
                if candidate.attempts >= self.max_attempts:
                    note = (
                        f"gave up after {candidate.attempts} attempts: "
                        f"the lease of {candidate.leased_by or 'a worker'} expired"
                    )
                    connection.execute(
                        sa.update(jobs)
                        .where(jobs.c.id == candidate.id)
                        .values(
                            state="dead",
                            lease_token=None,
                            lease_expires_at=None,
                            last_error=_join_errors(candidate.last_error, note),
                            finished_at=now,
                            updated_at=now,
                        )
                    )
                    continue
                row = connection.execute(
                    sa.update(jobs)
                    .where(jobs.c.id == candidate.id)
                    .values(
                        state="leased",
                        attempts=jobs.c.attempts + 1,
                        lease_token=secrets.token_hex(16),
                        leased_by=worker_id,
                        lease_expires_at=now + timedelta(seconds=self.lease_seconds),
                        updated_at=now,
                    )
                    .returning(*jobs.c)
                ).one()
                return _job(row)

    def _holding(self, job: Job) -> sa.ColumnElement[bool]:
        return sa.and_(
            jobs.c.id == job.id, jobs.c.lease_token == job.lease_token, jobs.c.state == "leased"
        )

    def heartbeat(self, job: Job) -> bool:
        """Extend the lease; False when it was lost (taken over, or the job is finished)."""
        now = self.clock()
        with self.engine.begin() as connection:
            result = connection.execute(
                sa.update(jobs)
                .where(self._holding(job))
                .values(
                    lease_expires_at=now + timedelta(seconds=self.lease_seconds), updated_at=now
                )
            )
            return result.rowcount == 1

    def complete(self, job: Job) -> bool:
        """Mark the job done, only if this lease still holds it."""
        now = self.clock()
        with self.engine.begin() as connection:
            result = connection.execute(
                sa.update(jobs)
                .where(self._holding(job))
                .values(state="done", lease_expires_at=None, finished_at=now, updated_at=now)
            )
            return result.rowcount == 1

    def fail(self, job: Job, error: str) -> str:
        """Record a failure: "retry" (queued again after a backoff) or "dead".

        Returns "lost" when this lease no longer holds the job; nothing changes then.
        """
        now = self.clock()
        error = error[:MAX_ERROR_CHARS]
        with self.engine.begin() as connection:
            attempts = connection.execute(
                sa.select(jobs.c.attempts).where(self._holding(job)).with_for_update()
            ).scalar_one_or_none()
            if attempts is None:
                return "lost"
            if attempts >= self.max_attempts:
                connection.execute(
                    sa.update(jobs)
                    .where(jobs.c.id == job.id)
                    .values(
                        state="dead",
                        lease_token=None,
                        lease_expires_at=None,
                        last_error=error,
                        finished_at=now,
                        updated_at=now,
                    )
                )
                return "dead"
            delay = min(self.backoff_cap_seconds, self.backoff_seconds * 2 ** (attempts - 1))
            requeue = self._requeue_values(now + timedelta(seconds=delay), now)
            requeue["last_error"] = error
            # When a newer job with the same dedupe key is queued, that one carries the retry.
            self._requeue(connection, job.id, requeue, now)
            return "retry"

    @staticmethod
    def _requeue_values(run_after: datetime, now: datetime) -> dict[str, Any]:
        return {
            "state": "queued",
            "run_after": run_after,
            "lease_token": None,
            "leased_by": None,
            "lease_expires_at": None,
            "finished_at": None,
            "updated_at": now,
        }

    @staticmethod
    def _requeue(
        connection: sa.Connection, job_id: int, values: dict[str, Any], now: datetime
    ) -> bool:
        """Put a job back in the queue; False when a queued job with its dedupe key exists.

        That newer job already stands for the same work, so this one is closed as done.
        """
        try:
            with connection.begin_nested():
                connection.execute(sa.update(jobs).where(jobs.c.id == job_id).values(values))
            return True
        except IntegrityError:
            note = "superseded by a newer queued job with the same dedupe key"
            connection.execute(
                sa.update(jobs)
                .where(jobs.c.id == job_id)
                .values(
                    state="done",
                    lease_token=None,
                    lease_expires_at=None,
                    last_error=_append_error(values.get("last_error"), note),
                    finished_at=now,
                    updated_at=now,
                )
            )
            return False

    def depth(self) -> dict[str, int]:
        """How many jobs are in each state (every state present, zero when empty)."""
        counts = dict.fromkeys(JOB_STATES, 0)
        with reading(self.engine) as connection:
            for state, count in connection.execute(
                sa.select(jobs.c.state, sa.func.count()).group_by(jobs.c.state)
            ):
                counts[state] = count
        return counts

    def depth_by_kind(self) -> dict[str, dict[str, int]]:
        """Counts per job kind and state."""
        result: dict[str, dict[str, int]] = {}
        with reading(self.engine) as connection:
            for kind, state, count in connection.execute(
                sa.select(jobs.c.kind, jobs.c.state, sa.func.count()).group_by(
                    jobs.c.kind, jobs.c.state
                )
            ):
                result.setdefault(kind, dict.fromkeys(JOB_STATES, 0))[state] = count
        return dict(sorted(result.items()))

    def jobs(self, state: str | None = None, limit: int = 100) -> list[Job]:
        """Jobs (in one state, or all), newest first."""
        if state is not None and state not in JOB_STATES:
            raise ValueError(f"unknown job state {state!r}; one of {', '.join(JOB_STATES)}")
        query = sa.select(jobs).order_by(jobs.c.id.desc()).limit(limit)
        if state is not None:
            query = query.where(jobs.c.state == state)
        with reading(self.engine) as connection:
            return [_job(row) for row in connection.execute(query)]

    def get(self, job_id: int) -> Job | None:
        """One job by id."""
        with reading(self.engine) as connection:
            row = connection.execute(sa.select(jobs).where(jobs.c.id == job_id)).first()
        return _job(row) if row is not None else None

    def dead_letters(self, limit: int = 100) -> list[Job]:
        """Jobs that ran out of attempts, oldest first."""
        query = sa.select(jobs).where(jobs.c.state == "dead").order_by(jobs.c.id).limit(limit)
        with reading(self.engine) as connection:
            return [_job(row) for row in connection.execute(query)]

    def retry_dead(self, job_id: int | None = None) -> int:
        """Queue dead jobs again (one, or all) with their attempts reset; returns how many.

        A dead job whose dedupe key already has a queued job is closed instead (not counted).
        """
        now = self.clock()
        query = sa.select(jobs.c.id).where(jobs.c.state == "dead").with_for_update()
        if job_id is not None:
            query = query.where(jobs.c.id == job_id)
        values = self._requeue_values(now, now) | {"attempts": 0}
        requeued = 0
        with self.engine.begin() as connection:
            for dead_id in connection.execute(query).scalars().all():
                requeued += self._requeue(connection, dead_id, values, now)
        return requeued

    def purge_done(self, older_than_seconds: float) -> int:
        """Delete jobs finished more than ``older_than_seconds`` ago; returns how many."""
        cutoff = self.clock() - timedelta(seconds=older_than_seconds)
        with self.engine.begin() as connection:
            result = connection.execute(
                sa.delete(jobs).where(jobs.c.state == "done", jobs.c.finished_at < cutoff)
            )
            return result.rowcount


def _append_error(error: str | None, note: str) -> sa.ColumnElement[str]:
    """SQL for the job's error (``error``, else the stored one) with ``note`` on a new line."""
    previous = jobs.c.last_error if error is None else sa.literal(error, sa.Text)
    return sa.func.coalesce(previous + "\n", "", type_=sa.Text) + note


def _join_errors(previous: str | None, note: str) -> str:
    return note if not previous else f"{previous}\n{note}"[-MAX_ERROR_CHARS:]
