"""What the repair's sweep of unreported PR heads reads and counts (bot/repair/head_sweeps.py
decides, bot/repair/redeliver.py acts): open heads, the latest report per PR, the PRs a pipeline job
is queued or running for, and the sweeps of each head so far."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from bot.store.db import reading
from bot.store.dialect import upsert
from bot.store.schema import jobs, open_prs, pr_sweeps, reports

PIPELINE_KEY_PREFIX = "pipeline:"


@dataclass(frozen=True)
class SweepRecord:
    """What the store remembers of the sweeps of one head."""

    sweeps: int
    last_swept_at: datetime
    gave_up: bool = False


@dataclass
class SweepInputs:
    open_heads: dict[tuple[str, int], str]
    reported_heads: dict[tuple[str, int], str]
    busy: set[tuple[str, int]]
    records: dict[tuple[str, int, str], SweepRecord]


def sweep_inputs(engine: sa.Engine) -> SweepInputs:
    """Everything :func:`bot.repair.head_sweeps.plan_sweeps` decides over, read in one
    connection."""
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
        busy = {key for key in map(pipeline_key, busy_keys) if key is not None}
        # Only the rows of heads still open and current matter; older heads' rows stay.
        current = sa.and_(
            pr_sweeps.c.repo == open_prs.c.repo,
            pr_sweeps.c.number == open_prs.c.number,
            pr_sweeps.c.head_sha == open_prs.c.head_sha,
        )
        records = {
            (row.repo, row.number, row.head_sha): SweepRecord(
                row.sweeps, row.last_swept_at, row.gave_up_at is not None
            )
            for row in connection.execute(
                sa.select(pr_sweeps).join(open_prs, current).where(open_prs.c.state == "open")
            )
        }
    return SweepInputs(open_heads, reported, busy, records)


def pipeline_key(key: str | None) -> tuple[str, int] | None:
    """(repo, number) of a pipeline job's dedupe key, "pipeline:<owner>/<repo>#<number>"."""
    if not key or not key.startswith(PIPELINE_KEY_PREFIX):
        return None
    repo, _, number = key.removeprefix(PIPELINE_KEY_PREFIX).rpartition("#")
    return (repo, int(number)) if number.isdigit() else None


def record_sweep(engine: sa.Engine, repo: str, number: int, head_sha: str, now: datetime) -> int:
    """Count one more sweep of this head; returns the count."""
    with engine.begin() as connection:
        statement = upsert(connection, pr_sweeps).values(
            repo=repo, number=number, head_sha=head_sha, sweeps=1, last_swept_at=now
        )
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=[pr_sweeps.c.repo, pr_sweeps.c.number, pr_sweeps.c.head_sha],
                set_={"sweeps": pr_sweeps.c.sweeps + 1, "last_swept_at": now},
            )
        )
        return connection.execute(
            sa.select(pr_sweeps.c.sweeps).where(_head(repo, number, head_sha))
        ).scalar_one()


def record_gave_up(engine: sa.Engine, repo: str, number: int, head_sha: str, now: datetime) -> None:
    """The repair published the failure for this head: it is not swept again."""
    with engine.begin() as connection:
        connection.execute(
            sa.update(pr_sweeps).where(_head(repo, number, head_sha)).values(gave_up_at=now)
        )


def forget_sweeps(engine: sa.Engine, before: datetime) -> int:
    """Drop the counts of heads last swept before ``before``; returns how many. A head given
    up on has its failure report stored, so it is not swept again without its row."""
    with engine.begin() as connection:
        return connection.execute(
            sa.delete(pr_sweeps).where(pr_sweeps.c.last_swept_at < before)
        ).rowcount


def sweep_count(engine: sa.Engine, repo: str, number: int, head_sha: str) -> int:
    with reading(engine) as connection:
        count = connection.execute(
            sa.select(pr_sweeps.c.sweeps).where(_head(repo, number, head_sha))
        ).scalar_one_or_none()
    return count or 0


def last_pipeline_error(engine: sa.Engine, repo: str, number: int) -> str | None:
    """The error the PR's most recent dead pipeline job ended with, if any."""
    with reading(engine) as connection:
        return connection.execute(
            sa.select(jobs.c.last_error)
            .where(
                jobs.c.kind == "pipeline",
                jobs.c.state == "dead",
                jobs.c.dedupe_key == f"{PIPELINE_KEY_PREFIX}{repo}#{number}",
            )
            .order_by(jobs.c.id.desc())
            .limit(1)
        ).scalar_one_or_none()


def _head(repo: str, number: int, head_sha: str) -> sa.ColumnElement[bool]:
    return sa.and_(
        pr_sweeps.c.repo == repo, pr_sweeps.c.number == number, pr_sweeps.c.head_sha == head_sha
    )
