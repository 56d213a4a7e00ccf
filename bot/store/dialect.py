"""The few statements whose spelling differs between PostgreSQL and SQLite."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite


def upsert(connection: sa.Connection, table: sa.Table):
    """``INSERT … ON CONFLICT`` for the connection's database (both spell it the same way)."""
    return upsert_for(connection.dialect.name, table)


def upsert_for(dialect_name: str, table: sa.Table):
    """``INSERT … ON CONFLICT`` for a database by its SQLAlchemy dialect name."""
    if dialect_name == "postgresql":
        return postgresql.insert(table)
    if dialect_name == "sqlite":
        return sqlite.insert(table)
    raise NotImplementedError(f"prbot does not support {dialect_name}")
