"""The tables prbot keeps, as SQLAlchemy Core definitions shared by SQLite and PostgreSQL.

Migrations (``bot/store/migrations/versions``) create these; a test checks that the migrated
database and this module agree, so change both together.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

metadata = sa.MetaData()

# SQLite only auto-numbers an ``INTEGER PRIMARY KEY``; Postgres wants 64-bit ids.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Json = sa.JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both databases.

    Postgres keeps ``timestamptz``. SQLite has no timezone type, so values are stored as naive
    UTC text (fixed width, so string comparison orders them) and come back tagged as UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        # A naive value is taken to be UTC already (GitHub's timestamps are UTC).
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC (the one clock every store module uses)."""
    return datetime.now(UTC)


# Webhook deliveries as received. The GUID (X-GitHub-Delivery) is unique: a redelivery is
# recognised by the constraint alone, without a read first.
deliveries = sa.Table(
    "deliveries",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("guid", sa.String(100), nullable=False),
    sa.Column("event", sa.String(100), nullable=False),
    sa.Column("action", sa.String(100), nullable=True),
    sa.Column("repo", sa.String(300), nullable=True),
    sa.Column("installation_id", sa.BigInteger(), nullable=True),
    sa.Column("body", sa.LargeBinary(), nullable=False),
    sa.Column("received_at", UTCDateTime(), nullable=False),
    # ``rejected``: signed, but a field prbot uses was missing or invalid (``reason`` says
    # which); stored for the record, with no job.
    sa.Column("status", sa.String(16), nullable=False, server_default="accepted"),
    sa.Column("reason", sa.Text(), nullable=True),
    sa.UniqueConstraint("guid", name="uq_deliveries_guid"),
    sa.CheckConstraint("status IN ('accepted', 'rejected')", name="ck_deliveries_status"),
)
sa.Index("ix_deliveries_status_received", deliveries.c.status, deliveries.c.received_at)

DELIVERY_STATUSES = ("accepted", "rejected")

JOB_STATES = ("queued", "leased", "done", "dead")

# The durable job queue. A job is queued -> leased -> done, or back to queued on a retry, or
# dead after too many attempts. ``lease_token`` changes on every lease, so a worker whose
# lease expired (and was taken over) cannot complete or fail the job any more.
jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(100), nullable=False),
    sa.Column("payload", Json, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("dedupe_key", sa.String(300), nullable=True),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("run_after", UTCDateTime(), nullable=False),
    sa.Column("lease_token", sa.String(64), nullable=True),
    sa.Column("leased_by", sa.String(200), nullable=True),
    sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
    sa.Column("last_error", sa.Text(), nullable=True),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Column("finished_at", UTCDateTime(), nullable=True),
    sa.CheckConstraint("state IN ('queued', 'leased', 'done', 'dead')", name="ck_jobs_state"),
)
# What lease() scans: runnable queued jobs and expired leases, oldest first.
sa.Index("ix_jobs_state_run_after", jobs.c.state, jobs.c.run_after, jobs.c.id)
# At most one *queued* job per dedupe key: enqueue coalesces into it with an upsert.
sa.Index(
    "ux_jobs_dedupe_queued",
    jobs.c.dedupe_key,
    unique=True,
    postgresql_where=sa.text("state = 'queued'"),
    sqlite_where=sa.text("state = 'queued'"),
)

installations = sa.Table(
    "installations",
    metadata,
    sa.Column("installation_id", sa.BigInteger(), primary_key=True, autoincrement=False),
    sa.Column("account", sa.String(200), nullable=False),
    # None means "all repositories" (GitHub's repository_selection=all).
    sa.Column("repositories", Json, nullable=True),
    sa.Column("deleted", sa.Boolean(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
)

# The newest head seen per PR, ordered by the PR's updated_at from GitHub, so a late job for
# an older head can tell it has been overtaken.
pr_heads = sa.Table(
    "pr_heads",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("head_sha", sa.String(64), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Column("observed_at", UTCDateTime(), nullable=False),
)

# Idempotent side effects (a comment, a check run, a reply), keyed by what they are about.
effects = sa.Table(
    "effects",
    metadata,
    sa.Column("key", sa.String(500), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("external_id", sa.String(200), nullable=True),
    sa.Column("head_sha", sa.String(64), nullable=True),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.CheckConstraint("state IN ('pending', 'done')", name="ck_effects_state"),
)

# The repair's re-runs of open PR heads that have no current report (bot/repair/head_sweeps.py):
# how many per head, when the last one was queued, and when it gave up and published the
# failure instead (migration 0005). One row per head ever swept.
pr_sweeps = sa.Table(
    "pr_sweeps",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("head_sha", sa.String(64), primary_key=True),
    sa.Column("sweeps", sa.Integer(), nullable=False),
    sa.Column("last_swept_at", UTCDateTime(), nullable=False),
    sa.Column("gave_up_at", UTCDateTime(), nullable=True),
)

# One report per PR head (the latest rendering of it); dry-run mode reads them back.
reports = sa.Table(
    "reports",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("repo", sa.String(300), nullable=False),
    sa.Column("number", sa.Integer(), nullable=False),
    sa.Column("head_sha", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("report", Json, nullable=False),
    sa.Column("markdown", sa.Text(), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.UniqueConstraint("repo", "number", "head_sha", name="uq_reports_head"),
)
sa.Index("ix_reports_pr_created", reports.c.repo, reports.c.number, reports.c.created_at)

# Key-value cache for checks (bot.core.sections.Cache). Keys can be long (a resolution's
# inputs), so rows are found by a SHA-256 of the key; the key itself is kept and compared.
cache_entries = sa.Table(
    "cache_entries",
    metadata,
    sa.Column("namespace", sa.String(100), primary_key=True),
    sa.Column("key_hash", sa.String(64), primary_key=True),
    sa.Column("key", sa.Text(), nullable=False),
    sa.Column("value", sa.Text(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
)

# The open-PR index of the duplicates audit (migration 0002). Each open PR keeps its raw
# text and its features (JSON); readers rebuild the inverted indexes in memory from these
# rows and then follow ``seq`` (bot/store/open_prs.py).
# One row per PR ever seen open. Closing keeps the row (state "closed") so that processes
# syncing by ``seq`` learn about the removal.
open_prs = sa.Table(
    "open_prs",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("title", sa.Text(), nullable=False),
    sa.Column("body", sa.Text(), nullable=False),
    sa.Column("author", sa.String(200), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=True),
    # GitHub's updated_at of the payload last applied: an older event never overwrites a newer.
    sa.Column("updated_at", sa.String(40), nullable=False),
    sa.Column("head_sha", sa.String(64), nullable=False),
    # Whether the file list (and so the code features) is known, and whether it had patches.
    sa.Column("files_known", sa.Boolean(), nullable=False),
    sa.Column("patches_known", sa.Boolean(), nullable=False),
    sa.Column("features", Json, nullable=False),
    # The repository generation at the last write: readers fetch rows newer than they have.
    sa.Column("seq", sa.BigInteger(), nullable=False),
    sa.Index("ix_open_prs_repo_seq", "repo", "seq"),
)

# Per repository: a counter bumped by every write, and the listing's ETags.
open_pr_repos = sa.Table(
    "open_pr_repos",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("generation", sa.BigInteger(), nullable=False),
    # {"<page>": {"etag": "...", "prs": [[number, head_sha, updated_at], ...]}}
    sa.Column("listing", Json, nullable=False),
    sa.Column("reconciled_at", UTCDateTime(), nullable=True),
)
