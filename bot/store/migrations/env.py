"""Alembic environment, driven from code: ``bot.store.db.migrate`` hands in a connection.

There is no alembic.ini. The caller puts an open connection (inside its transaction) in
``config.attributes["connection"]``; migrations run on it, so the caller's lock covers them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from bot.store import ci_schema  # noqa: F401 - registers the CI tables on the metadata
from bot.store.schema import metadata

config = context.config


def run_on(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things in place; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
        return
    # Fallback for the alembic command line: a URL from the config or the prbot default.
    from bot.store.db import default_database_url, make_engine

    engine = make_engine(config.get_main_option("sqlalchemy.url") or default_database_url())
    with engine.begin() as connection:
        run_on(connection)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("prbot migrations run online only (bot.store.db.migrate)")
run()
