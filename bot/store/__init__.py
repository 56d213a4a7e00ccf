"""prbot's database: webhook deliveries, the durable job queue, and what the bot remembers.

SQLAlchemy Core over SQLite (the default, one file) or PostgreSQL (for replicas)::

    engine = make_engine(default_database_url())
    migrate(engine)                       # idempotent; safe when replicas start together
    record_delivery(engine, guid=..., event=..., action=..., repo=..., installation_id=...,
                    body=raw)            # False for a redelivered GUID
    queue = Queue(engine)
    job = queue.lease("worker-1")         # then queue.complete(job) or queue.fail(job, error)

Modules: ``db`` (engines, migrate, ping), ``schema`` (the tables), ``queue``, ``deliveries``,
``state`` (installations, PR heads, idempotent effects, reports, the checks' cache),
``open_prs`` (the open-PR index of the duplicates audit), ``sweeps`` (the repair's re-runs
of heads without a report).

Adding a migration
------------------
1. Define or change the table in Core in ``bot/store/schema.py``, and put its queries in a
   module of this package (like ``open_prs.py`` for the duplicates audit's index): logic
   packages hold no SQL (tests/test_invariant_imports.py).
2. Add ``bot/store/migrations/versions/<rev>_<what>.py`` with ``revision = "<rev>"`` (the next
   short number: "0002", "0003", ...) and ``down_revision`` = the current head. Copy
   ``0001_initial.py`` for the shape; spell the columns out with ``op`` calls rather than
   importing tables from ``schema`` (a migration must keep doing what it did when written).
   On SQLite, alter existing tables inside ``with op.batch_alter_table(name) as batch:``.
3. ``migrate(engine)`` picks it up (there is no alembic.ini; ``db.alembic_config()`` builds
   the configuration). tests/test_store_migrations.py checks that the revisions form one chain
   and that the migrated database matches ``metadata`` (every ``bot/**/schema.py`` imported),
   on SQLite and on Postgres.
To draft a file from the template: ``alembic.command.revision(bot.store.db.alembic_config(),
"what it does", rev_id="0003")``, then fill in upgrade() and downgrade().
"""

from bot.store.db import default_database_url, make_engine, migrate, ping
from bot.store.deliveries import Delivery, count_deliveries, get_delivery, record_delivery
from bot.store.queue import Job, Queue
from bot.store.state import (
    Effect,
    Installation,
    StoreCache,
    begin_effect,
    current_head,
    finish_effect,
    get_effect,
    get_installation,
    latest_report,
    observe_head,
    record_installation,
    save_report,
)

__all__ = [
    "Delivery",
    "Effect",
    "Installation",
    "Job",
    "Queue",
    "StoreCache",
    "begin_effect",
    "count_deliveries",
    "current_head",
    "default_database_url",
    "finish_effect",
    "get_delivery",
    "get_effect",
    "get_installation",
    "latest_report",
    "make_engine",
    "migrate",
    "observe_head",
    "ping",
    "record_delivery",
    "record_installation",
    "save_report",
]
