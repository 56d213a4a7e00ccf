"""A scratch PostgreSQL schema: tests and benchmarks get an empty database in a shared one."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy.engine import make_url

from bot.store.db import make_engine


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
