"""bot.worker.ci.signal over real HTTP (the local Buildkite) and a real database: a failed
smoke job classified against main's seeded history, retried once (never twice, across
replays and a crash), the calls each report costs, and a listing that times out half-way."""

from __future__ import annotations

import httpx
import pytest

from bot.engines.base import BuildRef, BuildRequest
from bot.engines.buildkite import BuildkiteEngine
from bot.store import jobs as store
from bot.store import state
from bot.testing.buildkite_server import FakeBuildkite
from bot.testing.buildkite_shapes import history
from bot.worker.ci.results import refresh_build
from bot.worker.ci.signal import HistoryCache, classify_failures

TOKEN = "bk-signal-token-0123456789"
REPO = "acme/widgets"
CONTEXT = {"base_branch": "main", "ci_signal": {"history_builds": 50}}


@pytest.fixture
def buildkite():
    with FakeBuildkite(token=TOKEN) as server:
        server.seed_history(
            history(
                {
                    "healthy": "P" * 30,
                    "flips": "PPFPPPFPPPRPPPPPPPPP",
                    "broken": "FFFPPPPPPP",
                },
                newest=900,
            )
        )
        yield server


def client(server: FakeBuildkite, timeout: float = 10.0) -> BuildkiteEngine:
    return BuildkiteEngine(
        organization="acme",
        pipeline="ci",
        token=TOKEN,
        api_url=server.url,
        client=httpx.Client(timeout=timeout),
    )


def dispatched(db, server, pr: int, steps: tuple[str, ...], kind: str = "gpu_smoke") -> int:
    head = f"{pr:040x}"
    for step in steps:
        spec = store.JobSpec(
            store.JobKey(REPO, pr, head, step), head, kind, "buildkite", "b200", step
        )
        assert store.claim(db, spec, attempt=1, dispatch_key=f"key-{pr}")
    engine = client(server)
    ref = engine.create_build(BuildRequest(REPO, pr, head, "feature", "main", "m", steps))
    store.record_build(
        db,
        f"key-{pr}",
        engine_name="buildkite",
        build_id=ref.id,
        build_number=ref.number,
        build_url=ref.web_url,
    )
    return ref.number


def finish(db, server, pr: int, number: int, outcome: dict[str, str], cache: HistoryCache):
    """Finish the jobs, read them back as the build's news does, then classify; the calls."""
    engine = client(server)
    for step, job_state in outcome.items():
        server.finish_job(number, step, job_state, deliver=False)
    refresh_build(db, engine, store.records_for_head(db, REPO, pr, f"{pr:040x}"))
    before = len(server.calls)
    records = store.records_for_head(db, REPO, pr, f"{pr:040x}")
    classify_failures(db, engine, records, CONTEXT, histories=cache)
    return len(server.calls) - before


def records(db, pr: int) -> dict[str, store.JobRecord]:
    return {r.key.name: r for r in store.records_for_head(db, REPO, pr, f"{pr:040x}")}


def test_a_build_with_no_failure_costs_no_call(engine, buildkite):
    number = dispatched(engine, buildkite, 1, ("healthy", "flips"))
    assert (
        finish(
            engine, buildkite, 1, number, {"healthy": "passed", "flips": "passed"}, HistoryCache()
        )
        == 0
    )
    assert all(r.signal is None for r in records(engine, 1).values())


def test_a_new_failure_is_retried_once_then_called_new(engine, buildkite):
    cache = HistoryCache()
    number = dispatched(engine, buildkite, 2, ("healthy",))
    # One call for the head build, one page of main's builds, one retry.
    assert finish(engine, buildkite, 2, number, {"healthy": "failed"}, cache) == 3
    assert buildkite.count_calls("PUT", "/retry") == 1
    record = records(engine, 2)["healthy"]
    assert record.state == "running" and record.signal is None
    assert record.job_url.endswith(buildkite.builds[number].current("healthy").id)
    # The retry fails too: new, confirmed, and no second retry; the cache saves the listing.
    assert finish(engine, buildkite, 2, number, {"healthy": "failed"}, cache) == 1
    assert buildkite.count_calls("PUT", "/retry") == 1
    signal = records(engine, 2)["healthy"].signal
    assert signal["classification"] == "new" and signal["confirmed"]
    assert signal["base_job_url"].startswith("https://buildkite.com/acme/ci/builds/900#")
    # A replay of the same news asks Buildkite nothing.
    before = len(buildkite.calls)
    classify_failures(
        engine,
        client(buildkite),
        store.records_for_head(engine, REPO, 2, f"{2:040x}"),
        CONTEXT,
        histories=cache,
    )
    assert len(buildkite.calls) == before


def test_a_retry_that_passes_is_flaky(engine, buildkite):
    cache = HistoryCache()
    number = dispatched(engine, buildkite, 3, ("healthy",))
    finish(engine, buildkite, 3, number, {"healthy": "failed"}, cache)
    finish(engine, buildkite, 3, number, {"healthy": "passed"}, cache)
    record = records(engine, 3)["healthy"]
    assert record.state == "passed"
    assert record.signal["classification"] == "flaky"
    assert "passed on a retry of the same commit" in record.signal["reason"]


def test_flaky_and_broken_steps_are_not_retried(engine, buildkite):
    number = dispatched(engine, buildkite, 4, ("flips", "broken"))
    finish(engine, buildkite, 4, number, {"flips": "failed", "broken": "timed_out"}, HistoryCache())
    assert buildkite.count_calls("PUT", "/retry") == 0
    found = {name: r.signal["classification"] for name, r in records(engine, 4).items()}
    assert found == {"flips": "flaky", "broken": "broken_trunk"}


def test_a_crash_after_the_retry_call_never_retries_twice(engine, buildkite):
    cache = HistoryCache()
    number = dispatched(engine, buildkite, 5, ("healthy",))
    buildkite.finish_job(number, "healthy", "failed", deliver=False)
    bk = client(buildkite)
    refresh_build(engine, bk, store.records_for_head(engine, REPO, 5, f"{5:040x}"))
    # The worker retried, then died before it recorded anything.
    failed = buildkite.builds[number].current("healthy")
    record = records(engine, 5)["healthy"]
    bk.retry_job(BuildRef("buildkite", record.build_id, number, ""), failed.id)
    classify_failures(engine, bk, [record], CONTEXT, histories=cache)
    assert buildkite.count_calls("PUT", "/retry") == 1
    assert records(engine, 5)["healthy"].state == "running"  # it follows the retry
    # The retry fails: two attempts, new and confirmed, still one retry in all.
    finish(engine, buildkite, 5, number, {"healthy": "failed"}, cache)
    assert buildkite.count_calls("PUT", "/retry") == 1
    assert records(engine, 5)["healthy"].signal["classification"] == "new"


def test_a_finished_retry_effect_is_never_retried_again(engine, buildkite):
    number = dispatched(engine, buildkite, 6, ("healthy",))
    key = f"ci-retry:buildkite:{REPO}#6@{6:040x}:healthy"
    state.finish_effect(engine, key, "x", None)
    finish(engine, buildkite, 6, number, {"healthy": "failed"}, HistoryCache())
    assert buildkite.count_calls("PUT", "/retry") == 0
    assert records(engine, 6)["healthy"].signal["classification"] == "new"


def test_a_listing_that_times_out_half_way_is_unknown_never_new_and_not_kept(engine, buildkite):
    buildkite.seed_history(history({"healthy": "P" * 150}, newest=2000))
    buildkite.stall_from_page, buildkite.stall_seconds = 2, 1.0
    context = {"base_branch": "main", "ci_signal": {"history_builds": 200}}
    cache = HistoryCache()
    number = dispatched(engine, buildkite, 7, ("healthy",))
    bk = client(buildkite, timeout=0.2)
    buildkite.finish_job(number, "healthy", "failed", deliver=False)
    refresh_build(engine, bk, store.records_for_head(engine, REPO, 7, f"{7:040x}"))
    classify_failures(engine, bk, list(records(engine, 7).values()), context, histories=cache)
    signal = records(engine, 7)["healthy"].signal
    assert signal["classification"] == "unknown"
    assert "only partly read" in signal["reason"] and "page 2" in signal["reason"]
    assert buildkite.count_calls("PUT", "/retry") == 0
    assert cache._kept == {}


def test_an_unreadable_head_build_is_unknown_with_the_reason(engine, buildkite):
    number = dispatched(engine, buildkite, 8, ("healthy",))
    bk = client(buildkite)
    buildkite.finish_job(number, "healthy", "failed", deliver=False)
    refresh_build(engine, bk, store.records_for_head(engine, REPO, 8, f"{8:040x}"))
    with buildkite.lock:
        del buildkite.builds[number]  # gone (a 404) by the time it is read
    classify_failures(engine, bk, list(records(engine, 8).values()), CONTEXT)
    signal = records(engine, 8)["healthy"].signal
    assert signal["classification"] == "unknown"
    assert "the head build could not be read: Buildkite answered 404" in signal["reason"]


def test_switched_off_in_the_rules_it_reads_nothing(engine, buildkite):
    number = dispatched(engine, buildkite, 9, ("healthy",))
    bk = client(buildkite)
    buildkite.finish_job(number, "healthy", "failed", deliver=False)
    refresh_build(engine, bk, store.records_for_head(engine, REPO, 9, f"{9:040x}"))
    before = len(buildkite.calls)
    off = {"ci_signal": {"enabled": False}}
    assert classify_failures(engine, bk, list(records(engine, 9).values()), off) == 0
    assert len(buildkite.calls) == before


def test_a_failed_benchmark_job_is_classified_never_retried(engine, buildkite) -> None:
    """A prbot bench run job main never ran: unknown, saying so (it was left unclassified,
    so out of the grouped section), and never retried (it holds a GPU for its timeout)."""
    number = dispatched(engine, buildkite, 10, ("bench-attention",), kind="benchmark")
    finish(engine, buildkite, 10, number, {"bench-attention": "failed"}, HistoryCache())
    signal = records(engine, 10)["bench-attention"].signal
    assert signal["classification"] == "unknown"
    assert signal["reason"] == "the step did not run in the 30 build(s) of main read"
    assert buildkite.count_calls("PUT", "/retry") == 0


def test_a_benchmark_on_mains_failing_step_is_broken_trunk(engine, buildkite) -> None:
    number = dispatched(engine, buildkite, 11, ("broken",), kind="benchmark")
    finish(engine, buildkite, 11, number, {"broken": "failed"}, HistoryCache())
    assert records(engine, 11)["broken"].signal["classification"] == "broken_trunk"


def test_a_benchmark_without_readable_results_is_unknown_with_the_reason(engine, buildkite):
    number = dispatched(engine, buildkite, 12, ("bench-attention",), kind="benchmark")
    # It passed on Buildkite, but left no result files: failed, with the reason.
    finish(engine, buildkite, 12, number, {"bench-attention": "passed"}, HistoryCache())
    record = records(engine, 12)["bench-attention"]
    assert record.state == "failed" and record.signal["classification"] == "unknown"
    assert record.signal["reason"].startswith("passed, but no benchmark results could be read")


def test_a_later_build_of_the_head_that_passes_at_once_is_not_classified(engine, buildkite):
    # prbot's one retry made the first build's job flaky. A /recheck's new build of the same
    # head that passes on its first try has no failure to explain: no classification at all
    # (it read "unknown: the build shows no failed job for this step").
    cache = HistoryCache()
    number = dispatched(engine, buildkite, 11, ("healthy",))
    finish(engine, buildkite, 11, number, {"healthy": "failed"}, cache)
    finish(engine, buildkite, 11, number, {"healthy": "passed"}, cache)
    assert records(engine, 11)["healthy"].signal["classification"] == "flaky"
    head = f"{11:040x}"
    spec = store.JobSpec(
        store.JobKey(REPO, 11, head, "healthy"), head, "gpu_smoke", "buildkite", "b200", "healthy"
    )
    assert store.claim(engine, spec, attempt=2, dispatch_key="key-11-again")
    ref = client(buildkite).create_build(
        BuildRequest(REPO, 11, head, "feature", "main", "m", ("healthy",))
    )
    store.record_build(
        engine,
        "key-11-again",
        engine_name="buildkite",
        build_id=ref.id,
        build_number=ref.number,
        build_url=ref.web_url,
    )
    assert finish(engine, buildkite, 11, ref.number, {"healthy": "passed"}, cache) == 0
    record = records(engine, 11)["healthy"]
    assert record.state == "passed" and record.build_id == ref.id
    assert not (record.signal or {}).get("classification")


def test_a_pass_is_a_retried_jobs_only_in_the_dispatch_prbot_retried_in(engine, buildkite):
    from bot.worker.ci.signal import _retried_in, _retry_key

    dispatched(engine, buildkite, 12, ("healthy",))
    record = records(engine, 12)["healthy"]
    assert not _retried_in(engine, record)  # no retry at all
    key = _retry_key(record)
    state.begin_effect(engine, key, record.key.head_sha)
    assert not _retried_in(engine, record)  # begun, never finished: no retry happened
    # Another dispatch's retry (a /recheck's, whose key differs): not this record's.
    state.finish_effect(engine, key, "key-other:0190-job", record.key.head_sha)
    assert not _retried_in(engine, record)
    # An Actions build id holds a colon; the job id never does, so the key is what is left.
    state.finish_effect(engine, key, f"{record.dispatch_key}:0190-job", record.key.head_sha)
    assert record.dispatch_key == "key-12" and _retried_in(engine, record)
    # An effect written before the dispatch key was kept in it (a bare job id) is taken as
    # this dispatch's, as it was read then.
    state.finish_effect(engine, key, "0190-job", record.key.head_sha)
    assert _retried_in(engine, record)
