"""Deliveries get a status (accepted | rejected) and the reason a signed one was refused.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch_alter_table: SQLite cannot add a CHECK constraint to an existing table in place.
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(
            sa.Column("status", sa.String(16), nullable=False, server_default="accepted")
        )
        batch.add_column(sa.Column("reason", sa.Text(), nullable=True))
        batch.create_check_constraint("ck_deliveries_status", "status IN ('accepted', 'rejected')")
    op.create_index("ix_deliveries_status_received", "deliveries", ["status", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_deliveries_status_received", table_name="deliveries")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_constraint("ck_deliveries_status", type_="check")
        batch.drop_column("reason")
        batch.drop_column("status")
