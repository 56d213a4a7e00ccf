"""The repair's sweeps of PR heads without a current report, counted per head.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pr_sweeps",
        sa.Column("repo", sa.String(300), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("head_sha", sa.String(64), primary_key=True),
        sa.Column("sweeps", sa.Integer(), nullable=False),
        sa.Column("last_swept_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("gave_up_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("pr_sweeps")
