"""Job records, approvals and full reports: idempotent claims on SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from bot.jobs.records import pending_build_id
from bot.store import jobs as store

HEAD = "a" * 40
BASE = "b" * 40


def spec(name: str = "V1 attention (B200)", side: str = "head", commit: str = HEAD, **extra):
    return store.JobSpec(
        store.JobKey("acme/widgets", 7, HEAD, name, side),
        commit,
        extra.pop("kind", "gpu_smoke"),
        "buildkite",
        "b200",
        extra.pop("step_key", "v1-attention-b200"),
        extra,
    )


def test_a_claim_is_won_once_per_attempt(engine: sa.Engine) -> None:
    job = spec()
    assert store.claim(engine, job, attempt=1, dispatch_key="k1")
    # A redelivered event, or a second worker, racing for the same attempt loses.
    assert not store.claim(engine, job, attempt=1, dispatch_key="k1-again")
    (record,) = store.records_for_head(engine, "acme/widgets", 7, HEAD)
    assert (record.state, record.attempt, record.dispatch_key) == ("queued", 1, "k1")
    assert record.claimed_without_build
    assert store.record_build(
        engine, "k1", engine_name="buildkite", build_id="b-1", build_number=3, build_url="u"
    )
    record = store.get_record(engine, job.key)
    assert record is not None and not record.claimed_without_build
    assert store.records_for_build(engine, "buildkite", "b-1") == [record]
    # A recheck claims the next attempt, once; the new claim forgets the old build.
    assert store.claim(engine, job, attempt=2, dispatch_key="k2")
    assert not store.claim(engine, job, attempt=2, dispatch_key="k2-again")
    record = store.get_record(engine, job.key)
    assert record is not None and (record.attempt, record.build_id) == (2, None)
    assert store.records_for_dispatch(engine, "k2") == [record]


def test_a_record_is_bound_to_one_build_and_never_rebound(engine: sa.Engine) -> None:
    job = spec()
    assert store.claim(engine, job, attempt=1, dispatch_key="k1")
    bind = {"engine_name": "buildkite", "build_number": None, "build_url": "u"}
    # The stand-in of a run the engine has not named yet gives way to the build.
    assert store.record_build(engine, "k1", build_id=pending_build_id("k1"), **bind) == 1
    assert store.get_record(engine, job.key).awaiting_build
    assert store.record_build(engine, "k1", build_id="b-real", **bind) == 1
    # Bound: a second build carrying the same key (named like prbot's) takes nothing over,
    # while the dispatcher recording the same build again is harmless.
    assert store.record_build(engine, "k1", build_id="b-forged", **bind) == 0
    assert store.record_build(engine, "k1", build_id="b-real", **bind) == 1
    record = store.get_record(engine, job.key)
    assert record is not None and record.build_id == "b-real" and not record.awaiting_build
    assert store.records_for_build(engine, "buildkite", "b-forged") == []


def test_recorded_builds_are_those_a_record_is_bound_to(engine: sa.Engine) -> None:
    job = spec()
    assert store.claim(engine, job, attempt=1, dispatch_key="k1")
    bind = {"engine_name": "buildkite", "build_number": 1, "build_url": "u"}
    assert store.record_build(engine, "k1", build_id="b-mine", **bind) == 1
    # A listed page of a head's builds, longer than one IN list: only prbot's own is prbot's,
    # whatever the others' meta-data says; the same id under another engine is not it.
    listed = [f"b-{i}" for i in range(1_200)] + ["b-mine"]
    assert store.recorded_builds(engine, "buildkite", listed) == {"b-mine"}
    assert store.recorded_builds(engine, "actions", listed) == set()
    assert store.recorded_builds(engine, "buildkite", []) == set()


def test_concurrent_claims_have_one_winner(engine: sa.Engine) -> None:
    job = spec()
    wins: list[bool] = []
    barrier = threading.Barrier(4)

    def race(index: int) -> None:
        barrier.wait()
        wins.append(store.claim(engine, job, attempt=1, dispatch_key=f"k{index}"))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == [False, False, False, True]


def test_undispatched_states_never_overwrite_a_dispatch(engine: sa.Engine) -> None:
    job = spec()
    store.note_undispatched(engine, job, "awaiting_approval")
    store.note_undispatched(engine, job, "awaiting_approval")  # replay: same row
    (record,) = store.records_for_head(engine, "acme/widgets", 7, HEAD)
    assert (record.state, record.attempt) == ("awaiting_approval", 0)
    # Approved: attempt 1 moves the undispatched row (attempt 0).
    assert store.claim(engine, job, attempt=1, dispatch_key="k1")
    store.note_undispatched(engine, job, "selected")
    assert store.get_record(engine, job.key).state == "queued"


def test_results_apply_to_the_dispatch_they_belong_to(engine: sa.Engine) -> None:
    job = spec()
    store.claim(engine, job, attempt=1, dispatch_key="k1")
    old = store.get_record(engine, job.key)
    assert store.update_result(engine, old, state="running", job_url="https://bk/1")
    assert store.update_result(engine, old, state="failed")
    # A late "running" never moves a finished job back.
    assert not store.update_result(engine, store.get_record(engine, job.key), state="running")
    store.claim(engine, job, attempt=2, dispatch_key="k2")
    # The first build's late webhook does not touch the second dispatch.
    assert not store.update_result(engine, old, state="passed")
    record = store.get_record(engine, job.key)
    assert (record.state, record.attempt) == ("queued", 2)


def test_a_refused_dispatch_fails_with_its_reason(engine: sa.Engine) -> None:
    job = spec()
    store.claim(engine, job, attempt=1, dispatch_key="k1")
    assert store.fail_dispatch(engine, "k1", "Buildkite answered 422: no") == 1
    record = store.get_record(engine, job.key)
    assert (record.state, record.error) == ("failed", "Buildkite answered 422: no")


def test_base_results_are_reused_by_configuration(engine: sa.Engine) -> None:
    wanted = {"config": "mla_decode.yaml", "backends": ["TOKENSPEED_MLA"], "runs": 5}
    base = spec("MLA decode", "base", BASE, kind="benchmark", **wanted)
    store.claim(engine, base, attempt=1, dispatch_key="kb")
    record = store.get_record(engine, base.key)
    assert store.base_results(engine, "acme/widgets", "MLA decode", BASE, wanted) is None
    store.update_result(engine, record, state="passed", results=[{"x": 1.0}])
    found = store.base_results(engine, "acme/widgets", "MLA decode", BASE, wanted)
    assert found is not None and found.results == [{"x": 1.0}]
    other = {**wanted, "backends": ["FLASHMLA"]}
    assert store.base_results(engine, "acme/widgets", "MLA decode", BASE, other) is None
    assert store.base_results(engine, "acme/widgets", "MLA decode", HEAD, wanted) is None


def test_approvals_are_per_head_and_approver(engine: sa.Engine) -> None:
    assert store.approve(engine, "acme/widgets", 7, HEAD, "maint", "comment 1")
    assert not store.approve(engine, "acme/widgets", 7, HEAD, "maint", "comment 2")
    assert store.approve(engine, "acme/widgets", 7, HEAD, "other", "label ok-to-test")
    assert store.approvers(engine, "acme/widgets", 7, HEAD) == ["maint", "other"]
    assert store.approvers(engine, "acme/widgets", 7, BASE) == []


def test_the_full_report_is_kept_per_head(engine: sa.Engine) -> None:
    assert store.load_full_report(engine, "acme/widgets", 7, HEAD) is None
    store.save_full_report(engine, "acme/widgets", 7, HEAD, {"sections": []}, {"a": 1})
    store.save_full_report(engine, "acme/widgets", 7, HEAD, {"sections": [1]}, {"a": 2})
    assert store.load_full_report(engine, "acme/widgets", 7, HEAD) == ({"sections": [1]}, {"a": 2})


def test_the_heads_with_a_report_are_found_by_commit(engine: sa.Engine) -> None:
    for repo, number in (("acme/widgets", 7), ("acme/widgets", 3), ("acme/fork", 1)):
        store.save_full_report(engine, repo, number, HEAD, {"sections": []}, {})
    store.save_full_report(engine, "acme/widgets", 9, "b" * 40, {"sections": []}, {})
    assert store.heads_with_report(engine, HEAD) == [
        ("acme/fork", 1),
        ("acme/widgets", 3),
        ("acme/widgets", 7),
    ]
    assert store.heads_with_report(engine, HEAD, repo="acme/widgets", limit=1) == [
        ("acme/widgets", 3)
    ]
    assert store.heads_with_report(engine, "c" * 40) == []
