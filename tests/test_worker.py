"""The worker loop on its own: lease, hand to the handler, complete, or fail and retry."""

from __future__ import annotations

import threading

from bot.store.queue import Queue
from bot.worker.handlers.registry import on_job
from bot.worker.loop import Worker, start_worker_threads

CALLS: list[dict] = []


@on_job("test-worker-echo")
def _echo(ctx, payload):
    CALLS.append(payload)


@on_job("test-worker-boom")
def _boom(ctx, payload):
    raise RuntimeError(f"boom {payload['n']}")


def _worker(handler_context) -> Worker:
    ctx = handler_context
    return Worker(
        ctx.settings, ctx.engine, Queue(ctx.engine, max_attempts=2, backoff_seconds=0), None
    )


def test_a_job_goes_to_its_handler_and_is_completed(handler_context):
    worker = _worker(handler_context)
    job_id = worker.queue.enqueue("test-worker-echo", {"n": 1})
    assert worker.run_once() is True
    assert CALLS[-1] == {"n": 1}
    assert worker.queue.get(job_id).state == "done"
    assert worker.run_once() is False  # nothing left


def test_a_failing_handler_is_retried_then_dead_lettered_with_its_error(handler_context):
    worker = _worker(handler_context)
    job_id = worker.queue.enqueue("test-worker-boom", {"n": 7})
    assert worker.run_once() is True
    job = worker.queue.get(job_id)
    assert (job.state, job.attempts) == ("queued", 1)
    assert "RuntimeError: boom 7" in job.last_error
    assert worker.run_once() is True
    assert worker.queue.get(job_id).state == "dead"


def test_a_job_of_an_unknown_kind_fails_instead_of_vanishing(handler_context):
    worker = _worker(handler_context)
    job_id = worker.queue.enqueue("no-such-kind", {})
    worker.run_once()
    job = worker.queue.get(job_id)
    assert job.state == "queued" and "unknown job kind 'no-such-kind'" in job.last_error


def test_worker_threads_stop_when_told(handler_context):
    stop = threading.Event()
    threads = start_worker_threads(lambda queue: _worker(handler_context), None, 2, stop)
    assert all(t.is_alive() for t in threads)
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(t.is_alive() for t in threads)


@on_job("test-worker-learns-head")
def _learns_head(ctx, payload):
    from bot.runtime.logs import learn_fields

    learn_fields(head="c0ffee", pr=None)  # as a pipeline queued without its head does


def test_the_done_line_names_what_the_job_learned_while_it_ran(handler_context):
    import io
    import json
    import logging

    from bot.runtime.logs import JsonFormatter, Redactor

    worker = _worker(handler_context)
    job_id = worker.queue.enqueue("test-worker-learns-head", {"repo": "acme/w", "number": 4})
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(Redactor())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("bot.worker.loop")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        assert worker.run_once() is True
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [done] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert done["message"].startswith(f"job {job_id} (test-worker-learns-head) done")
    # Fields of the payload, and the head the handler learned (serve's flaky log test: the
    # last pipeline line of a run queued by a sweep had no head).
    assert (done["repo"], done["pr"], done["head"], done["job_id"]) == (
        "acme/w",
        4,
        "c0ffee",
        job_id,
    )
