"""A scratch PostgreSQL schema: tests and benchmarks get an empty database in a shared one."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bot.store.db import DatabaseUrlError, make_engine


def scratch_schema(base: str, prefix: str = "prbot_scratch") -> tuple[str, Callable[[], None]]:
    """A new, empty schema in the database at ``base``: (a URL whose search_path is that
    schema, a function that drops it). Rows of one user never reach another's."""
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = make_engine(base)
    with admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})

    def drop() -> None:
        with admin.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.dispose()

    return url.render_as_string(hide_password=False), drop


def unreachable(url: str, timeout: int = 5) -> str | None:
    """Why the database at ``url`` cannot be used (one line), or None when it answers."""
    try:
        engine = make_engine(url, connect_args={"connect_timeout": timeout})
    except DatabaseUrlError as exc:
        return str(exc)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError as exc:
        lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        return lines[0] if lines else exc.__class__.__name__
    finally:
        engine.dispose()
    return None


if __name__ == "__main__":  # python -m bot.testing.pg_schema URL: exit 2 with one line if down
    problem = unreachable(sys.argv[1])
    if problem:
        print(
            f"test database {sys.argv[1]} cannot be used: {problem} "
            "(README, Two commands: how to get one)",
            file=sys.stderr,
        )
        sys.exit(2)
