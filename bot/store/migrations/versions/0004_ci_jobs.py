"""GPU jobs: dispatched job records, head approvals, the full report kept for re-rendering.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# Spelled out, not imported: a migration keeps creating what it created when written.
Json = sa.JSON().with_variant(JSONB(), "postgresql")
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "ci_jobs",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(300), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("side", sa.String(8), nullable=False),
        sa.Column("commit_sha", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("engine", sa.String(50), nullable=False),
        sa.Column("hardware", sa.String(100), nullable=False),
        sa.Column("step_key", sa.String(200), nullable=True),
        sa.Column("spec", Json, nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("dispatch_key", sa.String(200), nullable=True),
        sa.Column("build_id", sa.String(100), nullable=True),
        sa.Column("build_number", sa.BigInteger(), nullable=True),
        sa.Column("build_url", sa.Text(), nullable=True),
        sa.Column("job_url", sa.Text(), nullable=True),
        sa.Column("results", Json, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repo", "number", "head_sha", "name", "side", name="uq_ci_jobs_head"),
        sa.CheckConstraint(
            "state IN ('selected', 'awaiting_approval', 'queued', 'running', 'passed', 'failed',"
            " 'timed_out', 'canceled')",
            name="ck_ci_jobs_state",
        ),
        sa.CheckConstraint("side IN ('head', 'base')", name="ck_ci_jobs_side"),
    )
    op.create_index("ix_ci_jobs_build", "ci_jobs", ["engine", "build_id"])
    op.create_index("ix_ci_jobs_dispatch_key", "ci_jobs", ["dispatch_key"])
    op.create_index("ix_ci_jobs_commit", "ci_jobs", ["repo", "name", "commit_sha"])
    op.create_table(
        "ci_approvals",
        sa.Column("repo", sa.String(300), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("head_sha", sa.String(64), primary_key=True),
        sa.Column("approver", sa.String(200), primary_key=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "ci_reports",
        sa.Column("repo", sa.String(300), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("head_sha", sa.String(64), primary_key=True),
        sa.Column("context", Json, nullable=False),
        sa.Column("report", Json, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ci_reports")
    op.drop_table("ci_approvals")
    op.drop_index("ix_ci_jobs_commit", table_name="ci_jobs")
    op.drop_index("ix_ci_jobs_dispatch_key", table_name="ci_jobs")
    op.drop_index("ix_ci_jobs_build", table_name="ci_jobs")
    op.drop_table("ci_jobs")
