"""named_lock orders holders of one name and lets other names through, on SQLite and Postgres."""

from __future__ import annotations

import threading

import pytest

from bot.runtime.locks import named_lock

# Generous: only reached when something is broken (a holder that never lets go).
STUCK = 30


def _hold(engine, name, lock_dir, entered: threading.Event, leave: threading.Event):
    def body() -> None:
        with named_lock(engine, name, lock_dir):
            entered.set()
            leave.wait(STUCK)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_a_second_holder_of_the_same_name_waits_for_the_first(engine, tmp_path):
    lock_dir = tmp_path / "locks"
    first_in, first_leave = threading.Event(), threading.Event()
    first = _hold(engine, "acme/widgets#1", lock_dir, first_in, first_leave)
    assert first_in.wait(STUCK)
    second_in, second_leave = threading.Event(), threading.Event()
    second = _hold(engine, "acme/widgets#1", lock_dir, second_in, second_leave)
    # While the first holds it, the second cannot be inside (a short look; not a timing test).
    assert not second_in.wait(0.3)
    first_leave.set()
    assert second_in.wait(STUCK)
    second_leave.set()
    first.join(STUCK)
    second.join(STUCK)
    assert not first.is_alive() and not second.is_alive()


def test_other_names_do_not_wait(engine, tmp_path):
    lock_dir = tmp_path / "locks"
    held_in, held_leave = threading.Event(), threading.Event()
    holder = _hold(engine, "acme/widgets#1", lock_dir, held_in, held_leave)
    assert held_in.wait(STUCK)
    with named_lock(engine, "acme/widgets#2", lock_dir):
        # Got in while the other name is still held: its holder has not been let go.
        assert holder.is_alive() and not held_leave.is_set()
    held_leave.set()
    holder.join(STUCK)


def test_the_lock_is_released_when_the_body_raises(engine, tmp_path):
    lock_dir = tmp_path / "locks"
    with pytest.raises(RuntimeError, match="publish failed"):
        with named_lock(engine, "acme/widgets#3", lock_dir):
            raise RuntimeError("publish failed")
    entered, leave = threading.Event(), threading.Event()
    leave.set()
    thread = _hold(engine, "acme/widgets#3", lock_dir, entered, leave)
    assert entered.wait(STUCK)
    thread.join(STUCK)


def test_sqlite_locks_are_files_named_by_hash_in_a_directory_it_creates(tmp_path):
    from bot.store.db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    lock_dir = tmp_path / "data" / "locks"
    name = "acme/widgets#1 ../../etc/passwd"  # a name never becomes a path
    with named_lock(engine, name, lock_dir):
        (lock_file,) = lock_dir.iterdir()
    assert lock_file.suffix == ".lock" and len(lock_file.stem) == 32
    assert list(tmp_path.rglob("passwd")) == []
    engine.dispose()
