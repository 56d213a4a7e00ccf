"""Open-PR index for the duplicates audit: open_prs, open_pr_repos.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out, not imported: a migration keeps creating what it created when written.
Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "open_prs",
        sa.Column("repo", sa.String(300), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.String(40), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("files_known", sa.Boolean(), nullable=False),
        sa.Column("patches_known", sa.Boolean(), nullable=False),
        sa.Column("features", Json, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_open_prs_repo_seq", "open_prs", ["repo", "seq"])
    op.create_table(
        "open_pr_repos",
        sa.Column("repo", sa.String(300), primary_key=True),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("listing", Json, nullable=False),
        sa.Column("reconciled_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("open_pr_repos")
    op.drop_index("ix_open_prs_repo_seq", table_name="open_prs")
    op.drop_table("open_prs")
