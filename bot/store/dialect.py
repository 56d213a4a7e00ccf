"""The few statements whose spelling differs between PostgreSQL and SQLite."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite


def upsert(connection: sa.Connection, table: sa.Table):
    """``INSERT … ON CONFLICT`` for the connection's database (both spell it the same way)."""
    if connection.dialect.name == "postgresql":
        return postgresql.insert(table)
    if connection.dialect.name == "sqlite":
        return sqlite.insert(table)
    raise NotImplementedError(f"prbot does not support {connection.dialect.name}")
