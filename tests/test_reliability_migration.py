"""An old database moved forward: a 0001-era file with a stored delivery, its queued job and
a posted comment's effect record is migrated to head, and the work in it carries on."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from bot.store import deliveries, state
from bot.store.db import alembic_config, current_revision, make_engine, migrate
from bot.store.queue import Queue

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def _old_database(url: str) -> sa.Engine:
    engine = make_engine(url)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0001")
    assert current_revision(engine) == "0001"
    body = json.dumps({"action": "opened", "pull_request": {"number": 7}}).encode()
    with engine.begin() as connection:
        delivery_id = connection.execute(
            sa.text(
                "INSERT INTO deliveries (guid, event, action, repo, installation_id, body,"
                " received_at) VALUES ('old-guid', 'pull_request', 'opened', 'acme/w', 1,"
                " :body, :now) RETURNING id"
            ),
            {"body": body, "now": NOW},
        ).scalar_one()
        connection.execute(
            sa.text(
                "INSERT INTO jobs (kind, payload, state, dedupe_key, attempts, run_after,"
                " created_at, updated_at) VALUES ('delivery', :payload, 'queued', NULL, 0,"
                " :now, :now, :now)"
            ),
            {"payload": json.dumps({"delivery_id": delivery_id}), "now": NOW},
        )
        connection.execute(
            sa.text(
                "INSERT INTO effects (key, state, external_id, head_sha, created_at,"
                " updated_at) VALUES ('comment:acme/w#7', 'done', '4242', 'abc', :now, :now)"
            ),
            {"now": NOW},
        )
    return engine


def test_an_old_database_is_moved_forward_with_its_work(database_url):
    engine = _old_database(database_url)
    migrate(engine)
    assert current_revision(engine) == HEAD
    # The delivery is there, with the status the later migration added.
    assert deliveries.count_deliveries(engine) == 1
    stored = deliveries.get_delivery(engine, 1)
    assert stored is not None and stored.guid == "old-guid" and stored.status == "accepted"
    # A redelivery of it is still recognised as known.
    assert not deliveries.record_delivery(
        engine,
        guid="old-guid",
        event="pull_request",
        action="opened",
        repo="acme/w",
        installation_id=1,
        body=b"{}",
    )
    # Its queued job is leased and handed out once.
    queue = Queue(engine)
    job = queue.lease("worker-a")
    assert job is not None and job.payload == {"delivery_id": stored.id}
    assert queue.lease("worker-b") is None
    assert queue.complete(job)
    # The posted comment's record survives: a rerun edits comment 4242, never posts anew.
    effect = state.get_effect(engine, "comment:acme/w#7")
    assert effect is not None and effect.external_id == "4242"
    engine.dispose()
