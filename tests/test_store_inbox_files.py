"""The intake's inbox file as found on disk: left by an earlier prbot, or not openable."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from bot.store import deliveries
from bot.store.db import make_engine, migrate
from bot.store.deliveries import IncomingDelivery
from bot.store.inbox import Inbox, inbox_path

# The inbox table as the first inbox (commit 245f3c7) created it: no AUTOINCREMENT, so
# SQLite gives an emptied table's ids again from 1.
_FIRST_INBOX_TABLE = """
CREATE TABLE inbox (
    id INTEGER NOT NULL, guid VARCHAR(100) NOT NULL, event VARCHAR(100) NOT NULL,
    action VARCHAR(100), repo VARCHAR(300), installation_id BIGINT, body BLOB NOT NULL,
    reason TEXT, received_at DATETIME NOT NULL, PRIMARY KEY (id), UNIQUE (guid)
)
"""


@pytest.fixture
def main(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    yield engine
    engine.dispose()


def _item(guid: str) -> IncomingDelivery:
    return IncomingDelivery(
        guid=guid, event="installation", action="created", body=b"{}", installation_id=9
    )


def _add(box: Inbox, guids: list[str]) -> None:
    with box.engine.begin() as connection:
        box.add(connection, [_item(guid) for guid in guids])


def test_an_inbox_file_without_autoincrement_never_loses_a_delivery(main):
    # An inbox left by the first inbox code, with a row a crash left in it.
    with sqlite3.connect(inbox_path(main)) as old:
        old.execute(_FIRST_INBOX_TABLE)
        old.execute(
            "INSERT INTO inbox (guid, event, body, received_at)"
            " VALUES ('left', 'installation', x'7b7d', '2026-12-01 14:00:00.000000')"
        )
    box = Inbox(main)
    # What the mover and the writer do: copy up to an id, then delete up to it.
    copied, up_to = box.move()
    assert (copied, up_to) == (1, 1)
    box.forget_now(up_to)
    _add(box, ["a", "b"])  # acknowledged 202 by the intake
    copied, up_to = box.move(up_to)
    box.forget_now(up_to)
    copied_more, up_to = box.move(up_to)
    box.forget_now(up_to)
    assert deliveries.count_deliveries(main) == 3  # left, a and b
    assert box.pending() == 0
    box.dispose()


def test_serve_with_an_unopenable_inbox_is_one_clear_line(tmp_path):
    (tmp_path / "prbot.sqlite-inbox").mkdir()  # where the inbox file should be
    env = {
        "PATH": "/usr/bin:/bin",
        "PRBOT_DATA_DIR": str(tmp_path),
        "PRBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'prbot.sqlite'}",
        "PRBOT_WEBHOOK_SECRET": "inbox-test-secret-0123",
    }
    result = subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--no-worker", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"prbot: error: cannot open the intake's inbox {tmp_path / 'prbot.sqlite-inbox'}:"
        " unable to open database file"
    ]


def test_a_move_holds_at_most_move_bytes_of_bodies_and_never_stalls_on_a_big_one(main):
    # 200 rows a move with bodies up to 25 MB each would be 5 GB in memory at once, when a
    # locked main database let big deliveries pile up; the intake itself holds 100 MB.
    from bot.store import inbox as inbox_module

    half = inbox_module.MOVE_BYTES // 2 + 1
    box = Inbox(main)
    with box.engine.begin() as connection:
        box.add(
            connection,
            [
                IncomingDelivery(
                    guid=guid, event="installation", action="created", body=b"x" * size
                )
                for guid, size in (("a", half), ("b", half), ("c", 2 * half), ("d", 10))
            ],
        )
    assert box.move() == (1, 1)  # a and b together would be more than MOVE_BYTES
    assert box.move(1) == (1, 2)
    assert box.move(2) == (1, 3)  # bigger than MOVE_BYTES alone: still moved, alone
    assert box.move(3) == (1, 4)
    assert deliveries.count_deliveries(main) == 4
    box.dispose()
