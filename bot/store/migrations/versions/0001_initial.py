"""Initial schema: deliveries, job queue, installations, PR heads, effects, reports, cache.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Spelled out rather than imported from bot.store.schema: a migration must keep creating
# what it created on the day it was written, whatever schema.py says later.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Json = sa.JSON().with_variant(JSONB(), "postgresql")


def utc() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("guid", sa.String(100), nullable=False),
        sa.Column("event", sa.String(100), nullable=False),
        sa.Column("action", sa.String(100), nullable=True),
        sa.Column("repo", sa.String(300), nullable=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("received_at", utc(), nullable=False),
        sa.UniqueConstraint("guid", name="uq_deliveries_guid"),
    )
    op.create_table(
        "jobs",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(100), nullable=False),
        sa.Column("payload", Json, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("dedupe_key", sa.String(300), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("run_after", utc(), nullable=False),
        sa.Column("lease_token", sa.String(64), nullable=True),
        sa.Column("leased_by", sa.String(200), nullable=True),
        sa.Column("lease_expires_at", utc(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", utc(), nullable=False),
        sa.Column("updated_at", utc(), nullable=False),
        sa.Column("finished_at", utc(), nullable=True),
        sa.CheckConstraint("state IN ('queued', 'leased', 'done', 'dead')", name="ck_jobs_state"),
    )
    op.create_index("ix_jobs_state_run_after", "jobs", ["state", "run_after", "id"])
    op.create_index(
        "ux_jobs_dedupe_queued",
        "jobs",
        ["dedupe_key"],
        unique=True,
        postgresql_where=sa.text("state = 'queued'"),
        sqlite_where=sa.text("state = 'queued'"),
    )
    op.create_table(
        "installations",
        sa.Column("installation_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("repositories", Json, nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("updated_at", utc(), nullable=False),
    )
    op.create_table(
        "pr_heads",
        sa.Column("repo", sa.String(300), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("updated_at", utc(), nullable=False),
        sa.Column("observed_at", utc(), nullable=False),
    )
    op.create_table(
        "effects",
        sa.Column("key", sa.String(500), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("external_id", sa.String(200), nullable=True),
        sa.Column("head_sha", sa.String(64), nullable=True),
        sa.Column("created_at", utc(), nullable=False),
        sa.Column("updated_at", utc(), nullable=False),
        sa.CheckConstraint("state IN ('pending', 'done')", name="ck_effects_state"),
    )
    op.create_table(
        "reports",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(300), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("report", Json, nullable=False),
        sa.Column("markdown", sa.Text(), nullable=False),
        sa.Column("created_at", utc(), nullable=False),
        sa.UniqueConstraint("repo", "number", "head_sha", name="uq_reports_head"),
    )
    op.create_index("ix_reports_pr_created", "reports", ["repo", "number", "created_at"])
    op.create_table(
        "cache_entries",
        sa.Column("namespace", sa.String(100), primary_key=True),
        sa.Column("key_hash", sa.String(64), primary_key=True),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated_at", utc(), nullable=False),
    )


def downgrade() -> None:
    for table in ("cache_entries", "reports", "effects", "pr_heads", "installations"):
        op.drop_table(table)
    op.drop_index("ux_jobs_dedupe_queued", table_name="jobs")
    op.drop_index("ix_jobs_state_run_after", table_name="jobs")
    op.drop_table("jobs")
    op.drop_table("deliveries")
