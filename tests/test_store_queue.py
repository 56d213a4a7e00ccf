"""The job queue: leases, completion, retries with backoff, dead letters, coalescing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from bot.store.queue import Queue
from bot.store.schema import jobs


class Clock:
    """A clock the test moves by hand, so lease expiry and backoff need no sleeping."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(engine: sa.Engine, clock: Clock) -> Queue:
    return Queue(
        engine,
        lease_seconds=60,
        max_attempts=3,
        backoff_seconds=5,
        backoff_cap_seconds=600,
        clock=clock,
    )


def test_lease_then_complete(queue: Queue) -> None:
    job_id = queue.enqueue("pr", {"repo": "org/repo", "number": 7})
    job = queue.lease("worker-a")
    assert job is not None
    assert (job.id, job.kind, job.payload, job.attempts) == (
        job_id,
        "pr",
        {"repo": "org/repo", "number": 7},
        1,
    )
    assert job.lease_token and job.leased_by == "worker-a" and job.state == "leased"
    assert job.created_at.tzinfo is not None
    assert queue.lease("worker-b") is None, "a leased job is not handed out twice"
    assert queue.depth() == {"queued": 0, "leased": 1, "done": 0, "dead": 0}
    assert queue.complete(job) is True
    assert queue.complete(job) is False, "completing twice is refused"
    assert queue.depth() == {"queued": 0, "leased": 0, "done": 1, "dead": 0}
    assert queue.lease("worker-a") is None


def test_empty_queue_has_every_state_at_zero(queue: Queue) -> None:
    assert queue.lease("worker") is None
    assert queue.depth() == {"queued": 0, "leased": 0, "done": 0, "dead": 0}


def test_oldest_runnable_job_first_and_delays_respected(queue: Queue, clock: Clock) -> None:
    later = queue.enqueue("pr", {"n": 1}, delay_seconds=30)
    first = queue.enqueue("pr", {"n": 2})
    second = queue.enqueue("pr", {"n": 3})
    assert [queue.lease("w").id, queue.lease("w").id] == [first, second]
    assert queue.lease("w") is None, "the delayed job is not due yet"
    clock.advance(30)
    assert queue.lease("w").id == later


def test_fail_retries_with_exponential_backoff_then_dies(queue: Queue, clock: Clock) -> None:
    job_id = queue.enqueue("pr", {"n": 1})
    waits = []
    for attempt in (1, 2):
        job = queue.lease("w")
        assert (job.id, job.attempts) == (job_id, attempt)
        assert queue.fail(job, f"boom {attempt}") == "retry"
        retried = queue.get(job_id)
        assert retried.state == "queued" and retried.last_error == f"boom {attempt}"
        waits.append((retried.run_after - clock.now).total_seconds())
        assert queue.lease("w") is None, "not runnable before its backoff has passed"
        clock.advance(waits[-1])
    assert waits == [5, 10]
    job = queue.lease("w")
    assert job.attempts == 3
    assert queue.fail(job, "boom 3") == "dead"
    assert queue.depth()["dead"] == 1
    [dead] = queue.dead_letters()
    assert (dead.id, dead.state, dead.attempts, dead.last_error) == (job_id, "dead", 3, "boom 3")
    clock.advance(3600)
    assert queue.lease("w") is None, "dead jobs are never leased"


def test_backoff_is_capped(engine: sa.Engine, clock: Clock) -> None:
    queue = Queue(
        engine, max_attempts=10, backoff_seconds=100, backoff_cap_seconds=150, clock=clock
    )
    job_id = queue.enqueue("pr", {})
    for expected in (100, 150, 150):
        assert queue.fail(queue.lease("w"), "boom") == "retry"
        wait = (queue.get(job_id).run_after - clock.now).total_seconds()
        assert wait == expected
        clock.advance(wait)


def test_dead_letters_are_retried_one_or_all(queue: Queue, clock: Clock) -> None:
    ids = [queue.enqueue("pr", {"n": n}) for n in range(3)]
    for _ in range(3):  # max_attempts=3: each job fails three times
        for _ in ids:
            queue.fail(queue.lease("w"), "boom")
        clock.advance(600)
    assert [job.id for job in queue.dead_letters()] == ids
    assert queue.retry_dead(ids[1]) == 1
    assert queue.retry_dead(ids[1]) == 0, "no longer dead"
    revived = queue.get(ids[1])
    assert (revived.state, revived.attempts, revived.last_error) == ("queued", 0, "boom")
    assert queue.lease("w").id == ids[1]
    assert queue.retry_dead() == 2
    assert queue.depth() == {"queued": 2, "leased": 1, "done": 0, "dead": 0}
    assert queue.retry_dead() == 0


def test_expired_lease_is_taken_over_and_old_worker_loses(queue: Queue, clock: Clock) -> None:
    job_id = queue.enqueue("pr", {"n": 1})
    first = queue.lease("worker-a")
    clock.advance(59)
    assert queue.lease("worker-b") is None, "the lease has not expired yet"
    clock.advance(2)
    second = queue.lease("worker-b")
    assert (second.id, second.attempts, second.leased_by) == (job_id, 2, "worker-b")
    assert second.lease_token != first.lease_token
    assert queue.heartbeat(first) is False
    assert queue.complete(first) is False
    assert queue.fail(first, "late") == "lost"
    assert queue.get(job_id).state == "leased"
    assert queue.complete(second) is True


def test_heartbeat_extends_the_lease(queue: Queue, clock: Clock) -> None:
    queue.enqueue("pr", {})
    job = queue.lease("worker-a")
    for _ in range(3):
        clock.advance(50)
        assert queue.heartbeat(job) is True
        assert queue.lease("worker-b") is None
    assert queue.complete(job) is True
    assert queue.heartbeat(job) is False


def test_crash_looping_job_goes_dead_instead_of_leased(queue: Queue, clock: Clock) -> None:
    job_id = queue.enqueue("pr", {})
    for attempt in (1, 2, 3):
        assert queue.lease(f"worker-{attempt}").attempts == attempt
        clock.advance(61)  # the worker died without a word
    assert queue.lease("worker-4") is None
    dead = queue.get(job_id)
    assert dead.state == "dead"
    assert "gave up after 3 attempts" in dead.last_error
    assert "worker-3" in dead.last_error


def test_dedupe_key_coalesces_queued_jobs(queue: Queue) -> None:
    first = queue.enqueue("pr", {"head": "a"}, dedupe_key="pr:org/repo#1")
    again = queue.enqueue("pr", {"head": "b"}, dedupe_key="pr:org/repo#1")
    other = queue.enqueue("pr", {"head": "x"}, dedupe_key="pr:org/repo#2")
    assert again == first and other != first
    assert queue.depth()["queued"] == 2
    job = queue.lease("w")
    assert (job.id, job.payload) == (first, {"head": "b"})
    # Once leased, the job runs with what it has; a new push queues a new job.
    newer = queue.enqueue("pr", {"head": "c"}, dedupe_key="pr:org/repo#1")
    assert newer not in (first, other)
    assert queue.complete(job) is True


def test_coalescing_keeps_the_earlier_run_time(queue: Queue, clock: Clock) -> None:
    job_id = queue.enqueue("pr", {"v": 1}, dedupe_key="k", delay_seconds=60)
    assert queue.enqueue("pr", {"v": 2}, dedupe_key="k", delay_seconds=120) == job_id
    assert queue.get(job_id).run_after == clock.now + timedelta(seconds=60)
    assert queue.enqueue("pr", {"v": 3}, dedupe_key="k") == job_id
    assert queue.get(job_id).run_after == clock.now
    assert queue.lease("w").payload == {"v": 3}


def test_failed_job_superseded_by_newer_queued_job(queue: Queue) -> None:
    queue.enqueue("pr", {"v": 1}, dedupe_key="k")
    old = queue.lease("w")
    newer = queue.enqueue("pr", {"v": 2}, dedupe_key="k")
    assert queue.fail(old, "boom") == "retry"
    closed = queue.get(old.id)
    assert closed.state == "done"
    assert "boom" in closed.last_error and "superseded" in closed.last_error
    assert queue.lease("w").id == newer


def test_retry_dead_with_a_queued_sibling_closes_it(queue: Queue, clock: Clock) -> None:
    dead_id = queue.enqueue("pr", {"v": 1}, dedupe_key="k")
    for _ in range(3):
        queue.fail(queue.lease("w"), "boom")
        clock.advance(600)
    queue.enqueue("pr", {"v": 2}, dedupe_key="k")
    assert queue.retry_dead() == 0
    assert queue.get(dead_id).state == "done"
    assert queue.depth() == {"queued": 1, "leased": 0, "done": 1, "dead": 0}


def test_enqueue_inside_the_callers_transaction(engine: sa.Engine, queue: Queue) -> None:
    with engine.connect() as connection:
        with connection.begin() as transaction:
            queue.enqueue("pr", {"n": 1}, connection=connection)
            transaction.rollback()
        with connection.begin():
            kept = queue.enqueue("pr", {"n": 2}, connection=connection)
    assert [job.id for job in queue.jobs()] == [kept]


def test_purge_done_removes_only_old_finished_jobs(queue: Queue, clock: Clock) -> None:
    for n in range(3):
        queue.enqueue("pr", {"n": n})
    queue.complete(queue.lease("w"))
    clock.advance(3600)
    queue.complete(queue.lease("w"))
    assert queue.purge_done(older_than_seconds=1800) == 1
    assert queue.depth() == {"queued": 1, "leased": 0, "done": 1, "dead": 0}


def test_listing_and_counts_by_kind(queue: Queue) -> None:
    a = queue.enqueue("pr", {})
    b = queue.enqueue("delivery", {})
    queue.lease("w")
    assert [job.id for job in queue.jobs()] == [b, a]
    assert [job.id for job in queue.jobs(state="queued")] == [b]
    assert queue.depth_by_kind() == {
        "delivery": {"queued": 1, "leased": 0, "done": 0, "dead": 0},
        "pr": {"queued": 0, "leased": 1, "done": 0, "dead": 0},
    }
    with pytest.raises(ValueError, match="unknown job state"):
        queue.jobs(state="lost")
    assert queue.get(9999) is None


def test_payload_round_trips_as_json(engine: sa.Engine, queue: Queue) -> None:
    payload = {"text": "ünïcode ✓", "nested": {"list": [1, 2.5, None, True]}, "n": 2**40}
    job_id = queue.enqueue("pr", payload)
    assert queue.lease("w").payload == payload
    with engine.connect() as connection:
        stored = connection.execute(sa.select(jobs.c.payload).where(jobs.c.id == job_id))
        assert stored.scalar_one() == payload
