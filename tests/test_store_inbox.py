"""The intake's SQLite inbox: acknowledged deliveries reach the main database once each."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from bot.store import deliveries
from bot.store.db import make_engine, migrate
from bot.store.deliveries import IncomingDelivery, insert_deliveries
from bot.store.inbox import Inbox, InboxMover, inbox, inbox_path
from bot.store.queue import Queue
from bot.store.schema import deliveries as deliveries_table


@pytest.fixture
def main(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    yield engine
    engine.dispose()


def _item(guid: str, reason: str | None = None) -> IncomingDelivery:
    return IncomingDelivery(
        guid=guid,
        event="installation",
        action="created",
        body=b'{"action": "created"}',
        installation_id=9,
        reason=reason,
    )


def _add(box: Inbox, items: list[IncomingDelivery]) -> list[bool]:
    with box.engine.begin() as connection:
        return box.add(connection, items)


def test_the_inbox_lives_beside_the_database(main, tmp_path):
    box = Inbox(main)
    assert inbox_path(main) == tmp_path / "prbot.sqlite-inbox"
    assert inbox_path(main).exists()
    box.dispose()


def test_a_guid_known_in_the_inbox_the_database_or_the_batch_is_not_new(main):
    with main.begin() as connection:
        insert_deliveries(connection, [_item("in-main")])
    box = Inbox(main)
    assert _add(box, [_item("first")]) == [True]
    assert _add(box, [_item("first"), _item("in-main"), _item("x"), _item("x")]) == [
        False,
        False,
        True,
        False,
    ]
    assert box.pending() == 2
    box.dispose()


def test_a_move_keeps_the_time_received_queues_one_job_and_empties_the_inbox(main):
    box = Inbox(main)
    _add(box, [_item("a"), _item("b", reason="installation.id: not an integer")])
    with box.engine.connect() as connection:
        received = connection.execute(sa.select(inbox.c.received_at)).scalars().first()
    time.sleep(0.01)
    assert box.move() == (2, 2)
    assert box.pending() == 2  # copied; the writer thread deletes them
    box.forget_now(2)
    assert box.pending() == 0
    with main.connect() as connection:
        rows = {row.guid: row for row in connection.execute(sa.select(deliveries_table))}
    assert rows["a"].status == "accepted" and rows["b"].status == "rejected"
    assert rows["a"].received_at == received and received.tzinfo == UTC
    assert Queue(main).depth()["queued"] == 1  # none for the rejected one
    assert box.move(2) == (0, 2)
    box.dispose()


def test_a_crash_between_the_main_commit_and_the_inbox_delete_queues_nothing_twice(main):
    box = Inbox(main)
    _add(box, [_item("a"), _item("b")])
    # What a crash right after the main commit leaves: the rows in both places.
    with box.engine.connect() as connection:
        rows = connection.execute(sa.select(inbox).order_by(inbox.c.id)).all()
    with main.begin() as connection:
        insert_deliveries(connection, [_item(row.guid) for row in rows])
    assert box.move() == (2, 2)  # copied again, skipped by GUID
    assert deliveries.count_deliveries(main) == 2
    assert Queue(main).depth()["queued"] == 2
    box.dispose()


def test_the_mover_moves_what_a_crash_left_and_drains_on_stop(main):
    left = Inbox(main)
    _add(left, [_item("left-by-a-crash")])
    left.dispose()
    box = Inbox(main)
    told = []
    mover = InboxMover(box, told.append).start()
    deadline = time.monotonic() + 10
    while deliveries.count_deliveries(main) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert deliveries.count_deliveries(main) == 1  # on start, unwoken
    _add(box, [_item(f"n{i}") for i in range(450)])  # more than one batch
    mover.stop()  # never woken for these: stop still moves them
    assert deliveries.count_deliveries(main) == 451
    assert mover.moved == 451 and told[-1] == mover.moved_up_to == 451
    assert told == sorted(told)  # the writer is told how far, batch by batch
    box.dispose()


def test_a_deleted_rows_id_is_never_given_again(main):
    # The writer deletes up to the id the mover copied: a reused id would be a row deleted
    # unseen. AUTOINCREMENT keeps ids rising even when the inbox is emptied.
    box = Inbox(main)
    _add(box, [_item("a"), _item("b")])
    assert box.move() == (2, 2)
    box.forget_now(2)
    _add(box, [_item("c")])
    assert box.move(2) == (1, 3)
    box.dispose()


def test_a_failed_move_is_logged_and_tried_again(main, caplog, monkeypatch):
    box = Inbox(main)
    _add(box, [_item("a")])
    real = box.move
    calls = []

    def flaky(after_id: int = 0, limit: int = 200) -> tuple[int, int]:
        calls.append(1)
        if len(calls) == 1:
            raise sa.exc.OperationalError("INSERT", {}, Exception("database is locked"))
        return real(after_id, limit)

    monkeypatch.setattr("bot.store.inbox.RETRY_SECONDS", 0.01)
    monkeypatch.setattr(box, "move", flaky)
    mover = InboxMover(box, lambda up_to: None).start()
    mover.wake()
    deadline = time.monotonic() + 10
    while deliveries.count_deliveries(main) == 0 and time.monotonic() < deadline:
        mover.wake()
        time.sleep(0.01)
    mover.stop()
    assert deliveries.count_deliveries(main) == 1
    assert "could not move deliveries from the intake's inbox" in caplog.text
    box.dispose()


def test_only_sqlite_has_an_inbox():
    engine = sa.create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    with pytest.raises(ValueError, match="only a SQLite database"):
        Inbox(engine)


def test_received_at_is_now_unless_given(main):
    given = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with main.begin() as connection:
        insert_deliveries(
            connection,
            [
                _item("now"),
                IncomingDelivery(
                    guid="then", event="installation", action=None, body=b"{}", received_at=given
                ),
            ],
        )
    with main.connect() as connection:
        rows = dict(
            connection.execute(
                sa.select(deliveries_table.c.guid, deliveries_table.c.received_at)
            ).all()
        )
    assert rows["then"] == given and rows["now"] > given
