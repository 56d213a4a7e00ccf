"""Migrations: idempotent, safe when several processes start at once, matching schema.py."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import threading

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from bot.store.db import alembic_config, current_revision, make_engine, migrate
from bot.store.deliveries import count_deliveries, record_delivery
from bot.store.schema import metadata

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_revisions_form_one_chain_from_0001() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert len(script.get_heads()) == 1, "two migrations claim the same down_revision"
    chain = [revision.revision for revision in script.walk_revisions()]
    assert chain[-1] == "0001"
    assert all(len(revision) <= 8 for revision in chain), "revision ids are short strings"


def test_migrate_twice_is_a_no_op(database_url: str) -> None:
    engine = make_engine(database_url)
    assert current_revision(engine) is None
    migrate(engine)
    assert current_revision(engine) == HEAD
    record_delivery(
        engine, guid="g", event="ping", action=None, repo=None, installation_id=None, body=b"x"
    )
    migrate(engine)
    assert current_revision(engine) == HEAD
    assert count_deliveries(engine) == 1, "data survives"
    engine.dispose()


def import_table_modules() -> None:
    """Import every ``schema`` module under bot/, so tables of later migrations are compared."""
    import bot

    for module in pkgutil.walk_packages(bot.__path__, "bot."):
        if module.name.endswith(".schema"):
            importlib.import_module(module.name)


def test_migrated_database_matches_schema_module(engine: sa.Engine) -> None:
    import_table_modules()

    def ours(item, name, kind, reflected, compare_to) -> bool:
        # Tables of later migrations may live on metadata in modules not imported here.
        return not (kind == "table" and reflected and compare_to is None)

    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_object": ours}
        )
        differences = compare_metadata(context, metadata)
    assert differences == []


def test_downgrade_to_nothing_and_back(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "base")
    assert current_revision(engine) is None
    assert set(sa.inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate(engine)
    assert current_revision(engine) == HEAD


def test_concurrent_migrate_is_safe(database_url: str) -> None:
    engines = [make_engine(database_url) for _ in range(6)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(engines))

    def run(engine: sa.Engine) -> None:
        barrier.wait()
        try:
            migrate(engine)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert current_revision(engines[0]) == HEAD
    for engine in engines:
        engine.dispose()


@pytest.mark.slow  # spawns interpreters
def test_concurrent_migrate_from_processes(database_url: str) -> None:
    script = (
        "import sys; from bot.store.db import make_engine, migrate; "
        "migrate(make_engine(sys.argv[1]))"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, database_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    engine = make_engine(database_url)
    assert current_revision(engine) == HEAD
    engine.dispose()
