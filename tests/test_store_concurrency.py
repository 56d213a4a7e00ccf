"""Several workers on one queue: every job is processed exactly once, threads or processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import traceback
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.store.db import make_engine
from bot.store.queue import Queue

JOBS = 120

# A worker process: connects, waits for the start signal (so all lease at once), then leases
# and completes until the queue is empty, printing the ids it took.
WORKER_SCRIPT = """
import json, os, sys, time
from bot.store.db import make_engine
from bot.store.queue import Queue

url, start_file, name = sys.argv[1:4]
queue = Queue(make_engine(url))
while not os.path.exists(start_file):
    time.sleep(0.005)
taken = []
while (job := queue.lease(name)) is not None:
    if not queue.complete(job):
        sys.exit(f"{name} lost job {job.id}")
    taken.append(job.id)
print(json.dumps(taken))
"""


def fill(queue: Queue, count: int = JOBS) -> list[int]:
    return [queue.enqueue("pr", {"n": n}) for n in range(count)]


def assert_each_once(expected: list[int], taken_by: dict[str, list[int]]) -> None:
    taken = [job_id for ids in taken_by.values() for job_id in ids]
    duplicates = [job_id for job_id, seen in Counter(taken).items() if seen > 1]
    assert duplicates == [], f"jobs processed twice: {duplicates}"
    assert sorted(taken) == sorted(expected), "every job processed"


def test_threads_lease_each_job_once(engine: sa.Engine) -> None:
    queue = Queue(engine)
    expected = fill(queue)
    workers = 8
    taken_by: dict[str, list[int]] = {f"thread-{n}": [] for n in range(workers)}
    lost: list[int] = []
    barrier = threading.Barrier(workers)

    def work(name: str) -> None:
        barrier.wait()
        while (job := queue.lease(name)) is not None:
            taken_by[name].append(job.id)
            if not queue.complete(job):
                lost.append(job.id)

    threads = [threading.Thread(target=work, args=(name,)) for name in taken_by]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert lost == []
    assert_each_once(expected, taken_by)
    assert queue.depth() == {"queued": 0, "leased": 0, "done": JOBS, "dead": 0}


@pytest.mark.slow  # spawns interpreters
def test_processes_lease_each_job_once(database_url: str, engine: sa.Engine, tmp_path: Path):
    queue = Queue(engine)
    expected = fill(queue)
    start = tmp_path / "start"
    names = [f"process-{n}" for n in range(4)]
    processes = {
        name: subprocess.Popen(
            [sys.executable, "-c", WORKER_SCRIPT, database_url, str(start), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    }
    start.touch()
    taken_by = {}
    for name, process in processes.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        taken_by[name] = json.loads(out)
    assert_each_once(expected, taken_by)
    assert queue.depth()["done"] == JOBS


def test_producers_and_consumers_at_once(engine: sa.Engine) -> None:
    queue = Queue(engine)
    produced: list[int] = []
    lost: list[int] = []
    taken_by: dict[str, list[int]] = {f"consumer-{n}": [] for n in range(4)}
    producing = threading.Event()
    producing.set()
    barrier = threading.Barrier(6)

    def produce(offset: int) -> None:
        barrier.wait()
        for n in range(50):
            produced.append(queue.enqueue("pr", {"n": offset + n}))

    def consume(name: str) -> None:
        barrier.wait()
        while True:
            job = queue.lease(name)
            if job is None:
                if producing.is_set():
                    continue
                # Producers are done; one more look catches the last enqueue.
                if (job := queue.lease(name)) is None:
                    return
            taken_by[name].append(job.id)
            if not queue.complete(job):
                lost.append(job.id)

    producers = [threading.Thread(target=produce, args=(n * 100,)) for n in range(2)]
    consumers = [threading.Thread(target=consume, args=(name,)) for name in taken_by]
    for thread in producers + consumers:
        thread.start()
    for thread in producers:
        thread.join()
    producing.clear()
    for thread in consumers:
        thread.join()
    assert lost == []
    assert_each_once(produced, taken_by)


def test_concurrent_coalescing_keeps_one_queued_job(database_url: str, engine: sa.Engine):
    engines = [make_engine(database_url) for _ in range(6)]
    ids: list[int] = []
    errors: list[str] = []
    barrier = threading.Barrier(len(engines), timeout=60)

    def push(own: sa.Engine, n: int) -> None:
        try:
            barrier.wait()
            for attempt in range(10):
                payload = {"push": [n, attempt]}
                ids.append(Queue(own).enqueue("pr", payload, dedupe_key="pr:org/repo#1"))
        except BaseException:  # noqa: BLE001 - a thread's failure must fail the test
            errors.append(f"thread {n}:\n{traceback.format_exc()}")

    threads = [threading.Thread(target=push, args=(own, n)) for n, own in enumerate(engines)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for own in engines:
        own.dispose()
    assert errors == [], "\n".join(errors)
    assert len(ids) == 6 * 10  # every enqueue answered
    assert len(set(ids)) == 1
    assert Queue(engine).depth()["queued"] == 1
