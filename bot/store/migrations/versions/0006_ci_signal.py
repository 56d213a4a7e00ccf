"""A failed GPU job's classification (new, flaky, broken_trunk, unknown): ci_jobs.signal.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Spelled out, not imported: a migration keeps creating what it created when written.
Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("ci_jobs") as batch:
        batch.add_column(sa.Column("signal", Json, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ci_jobs") as batch:
        batch.drop_column("signal")
