"""What the bot remembers between jobs: installations, PR heads, side effects, reports, cache.

Every write is an upsert, so running a job twice (after a crash) leaves the same state.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from bot.store.db import reading
from bot.store.dialect import upsert
from bot.store.schema import cache_entries, effects, installations, pr_heads, reports, utcnow

# --- installations -------------------------------------------------------------------------


@dataclass
class Installation:
    """A GitHub App installation. ``repositories`` None means all of the account's repos."""

    installation_id: int
    account: str
    repositories: list[str] | None
    deleted: bool
    updated_at: datetime


def record_installation(
    engine: sa.Engine,
    installation_id: int,
    account: str,
    repositories: list[str] | None,
    deleted: bool = False,
) -> None:
    """Create or replace what is known about an installation."""
    if installation_id is None:
        raise ValueError("record_installation needs an installation id")
    now = utcnow()
    values = {
        "installation_id": installation_id,
        "account": account,
        "repositories": sorted(repositories) if repositories is not None else None,
        "deleted": deleted,
        "updated_at": now,
    }
    with engine.begin() as connection:
        statement = upsert(connection, installations).values(values)
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=[installations.c.installation_id],
                set_={
                    name: statement.excluded[name] for name in values if name != "installation_id"
                },
            )
        )


def get_installation(engine: sa.Engine, installation_id: int) -> Installation | None:
    """An installation by id, or None when never recorded."""
    with reading(engine) as connection:
        row = connection.execute(
            sa.select(installations).where(installations.c.installation_id == installation_id)
        ).first()
    if row is None:
        return None
    return Installation(
        installation_id=row.installation_id,
        account=row.account,
        repositories=row.repositories,
        deleted=row.deleted,
        updated_at=row.updated_at,
    )


# --- PR heads --------------------------------------------------------------------------------


def observe_head(
    engine: sa.Engine, repo: str, number: int, head_sha: str, updated_at: datetime
) -> bool:
    """Store ``head_sha`` as the PR's head unless a newer ``updated_at`` is stored.

    True when it was stored or is the stored head already; False when a newer head won.
    """
    return observe_head_verdict(engine, repo, number, head_sha, updated_at) != "older"


def observe_head_verdict(
    engine: sa.Engine,
    repo: str,
    number: int,
    head_sha: str,
    updated_at: datetime,
    moved_from: str | None = None,
) -> str:
    """:func:`observe_head`, saying which case it was: ``"current"`` (stored, or the stored
    head already), ``"older"`` (a newer head won), or ``"tied"``: stored over a different
    head with the same ``updated_at``. GitHub's times have whole seconds, so two pushes in
    one second tie, and only GitHub knows which head is the PR's now. Unless the event says
    it moved the PR from the stored head (``moved_from``, a ``synchronize``'s ``before``):
    then it is the newer one, and current.
    """
    with engine.begin() as connection:
        before = connection.execute(
            sa.select(pr_heads.c.head_sha, pr_heads.c.updated_at)
            .where(pr_heads.c.repo == repo, pr_heads.c.number == number)
            .with_for_update()
        ).first()
        statement = upsert(connection, pr_heads).values(
            repo=repo, number=number, head_sha=head_sha, updated_at=updated_at, observed_at=utcnow()
        )
        new = statement.excluded
        stored = connection.execute(
            statement.on_conflict_do_update(
                index_elements=[pr_heads.c.repo, pr_heads.c.number],
                set_={
                    "head_sha": new.head_sha,
                    "updated_at": new.updated_at,
                    "observed_at": new.observed_at,
                },
                where=pr_heads.c.updated_at <= new.updated_at,
            ).returning(pr_heads.c.head_sha)
        ).scalar_one_or_none()
        if stored is None:
            return "current" if _head(connection, repo, number) == head_sha else "older"
        if before is not None and before.head_sha not in (head_sha, moved_from):
            if _same_time(before.updated_at, updated_at):
                return "tied"
        return "current"


def _same_time(stored: datetime, given: datetime) -> bool:
    as_utc = [
        t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC) for t in (stored, given)
    ]
    return as_utc[0] == as_utc[1]


def current_head(engine: sa.Engine, repo: str, number: int) -> str | None:
    """The newest head SHA observed for a PR, or None."""
    with reading(engine) as connection:
        return _head(connection, repo, number)


def pulls_at_head(engine: sa.Engine, repo: str, head_sha: str, limit: int = 20) -> list[int]:
    """The PRs of ``repo`` whose newest observed head is ``head_sha`` (a fork's PR, which
    GitHub leaves out of check-run payloads, is found this way)."""
    with reading(engine) as connection:
        rows = connection.execute(
            sa.select(pr_heads.c.number)
            .where(pr_heads.c.repo == repo, pr_heads.c.head_sha == head_sha)
            .order_by(pr_heads.c.number)
            .limit(limit)
        )
        return [row.number for row in rows]


def _head(connection: sa.Connection, repo: str, number: int) -> str | None:
    return connection.execute(
        sa.select(pr_heads.c.head_sha).where(pr_heads.c.repo == repo, pr_heads.c.number == number)
    ).scalar_one_or_none()


# --- idempotent side effects -----------------------------------------------------------------


@dataclass
class Effect:
    """A side effect by key ("comment:org/repo#12"): pending until done, with its external id."""

    key: str
    state: str
    external_id: str | None
    head_sha: str | None
    updated_at: datetime


def _effect(row: sa.Row) -> Effect:
    return Effect(
        key=row.key,
        state=row.state,
        external_id=row.external_id,
        head_sha=row.head_sha,
        updated_at=row.updated_at,
    )


def get_effect(engine: sa.Engine, key: str) -> Effect | None:
    """The effect stored under ``key``, or None."""
    with reading(engine) as connection:
        row = connection.execute(sa.select(effects).where(effects.c.key == key)).first()
    return _effect(row) if row is not None else None


def begin_effect(engine: sa.Engine, key: str, head_sha: str | None = None) -> Effect:
    """Record the effect as pending when it is new; return its current row either way."""
    now = utcnow()
    with engine.begin() as connection:
        connection.execute(
            upsert(connection, effects)
            .values(key=key, state="pending", head_sha=head_sha, created_at=now, updated_at=now)
            .on_conflict_do_nothing(index_elements=[effects.c.key])
        )
        row = connection.execute(sa.select(effects).where(effects.c.key == key)).one()
    return _effect(row)


def finish_effect(
    engine: sa.Engine, key: str, external_id: str | int | None, head_sha: str | None = None
) -> None:
    """Mark the effect done. A None ``external_id`` or ``head_sha`` keeps the stored one."""
    now = utcnow()
    external = str(external_id) if external_id is not None else None
    with engine.begin() as connection:
        statement = upsert(connection, effects).values(
            key=key,
            state="done",
            external_id=external,
            head_sha=head_sha,
            created_at=now,
            updated_at=now,
        )
        new = statement.excluded
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=[effects.c.key],
                set_={
                    "state": "done",
                    "external_id": sa.func.coalesce(new.external_id, effects.c.external_id),
                    "head_sha": sa.func.coalesce(new.head_sha, effects.c.head_sha),
                    "updated_at": new.updated_at,
                },
            )
        )


def forget_effect(engine: sa.Engine, key: str) -> bool:
    """Drop an effect (e.g. its comment was deleted on GitHub, so it must be made anew)."""
    with engine.begin() as connection:
        return connection.execute(sa.delete(effects).where(effects.c.key == key)).rowcount == 1


# --- reports ---------------------------------------------------------------------------------


def save_report(
    engine: sa.Engine,
    repo: str,
    number: int,
    head_sha: str,
    status: str,
    report_json: dict[str, Any],
    markdown: str,
) -> None:
    """Store the report for one PR head (replacing an earlier one for the same head)."""
    now = utcnow()
    with engine.begin() as connection:
        statement = upsert(connection, reports).values(
            repo=repo,
            number=number,
            head_sha=head_sha,
            status=status,
            report=report_json,
            markdown=markdown,
            created_at=now,
        )
        new = statement.excluded
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=[reports.c.repo, reports.c.number, reports.c.head_sha],
                set_={
                    "status": new.status,
                    "report": new.report,
                    "markdown": new.markdown,
                    "created_at": new.created_at,
                },
            )
        )


def latest_report(
    engine: sa.Engine, repo: str, number: int, head_sha: str | None = None
) -> dict[str, Any] | None:
    """The most recently saved report of a PR (of one head, if given), or None.

    Keys: repo, number, head_sha, status, report, markdown, created_at.
    """
    query = (
        sa.select(reports)
        .where(reports.c.repo == repo, reports.c.number == number)
        .order_by(reports.c.created_at.desc(), reports.c.id.desc())
        .limit(1)
    )
    if head_sha is not None:
        query = query.where(reports.c.head_sha == head_sha)
    with reading(engine) as connection:
        row = connection.execute(query).first()
    if row is None:
        return None
    return {
        "repo": row.repo,
        "number": row.number,
        "head_sha": row.head_sha,
        "status": row.status,
        "report": row.report,
        "markdown": row.markdown,
        "created_at": row.created_at,
    }


# --- cache for checks ------------------------------------------------------------------------


class StoreCache:
    """``bot.core.sections.Cache`` in the database, shared by workers and replicas."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    @staticmethod
    def _hash(key: str) -> str:
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    def get(self, namespace: str, key: str) -> str | None:
        with reading(self.engine) as connection:
            return connection.execute(
                sa.select(cache_entries.c.value).where(
                    cache_entries.c.namespace == namespace,
                    cache_entries.c.key_hash == self._hash(key),
                    cache_entries.c.key == key,
                )
            ).scalar_one_or_none()

    def put(self, namespace: str, key: str, value: str) -> None:
        with self.engine.begin() as connection:
            statement = upsert(connection, cache_entries).values(
                namespace=namespace,
                key_hash=self._hash(key),
                key=key,
                value=value,
                updated_at=utcnow(),
            )
            new = statement.excluded
            connection.execute(
                statement.on_conflict_do_update(
                    index_elements=[cache_entries.c.namespace, cache_entries.c.key_hash],
                    set_={"key": new.key, "value": new.value, "updated_at": new.updated_at},
                )
            )
