"""The dispatch planner: trust, approvals, earlier records and recheck modes -> builds."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from bot.jobs import planner
from bot.jobs.compare import DEFAULT_ROUNDS
from bot.jobs.planner import Head, WantedJob
from bot.store.jobs import JobKey, JobRecord

HEAD, BASE = "a" * 40, "b" * 40
SMOKE = WantedJob("V1 attention (B200)", "gpu_smoke", "b200", "buildkite", "r", "v1-attention-b200")
SMOKE2 = WantedJob("Kernels (B200)", "gpu_smoke", "b200", "buildkite", "r", "kernels-b200")
BENCH = WantedJob(
    "MLA decode benchmark",
    "benchmark",
    "b200",
    "buildkite",
    "r",
    "prbot-attention-benchmark-b200",
    ("TOKENSPEED_MLA",),
    "benchmarks/attention_benchmarks/configs/mla_decode.yaml",
)
TRUSTED = Head("acme/widgets", 7, HEAD, BASE, trusted=True)
UNTRUSTED = Head("acme/widgets", 7, HEAD, BASE, trusted=False)
SECRET = b"an installation's own secret"


def plan(*args, **kwargs) -> planner.Plan:
    return planner.plan(*args, key_secret=SECRET, **kwargs)


def record(job: WantedJob, state: str, attempt: int = 1, side: str = "head", **extra) -> JobRecord:
    return JobRecord(
        id=1,
        key=JobKey("acme/widgets", 7, HEAD, job.name, side),
        commit_sha=HEAD if side == "head" else BASE,
        kind=job.kind,
        engine="buildkite",
        hardware=job.hardware,
        step_key=job.step_key,
        spec={},
        state=state,
        attempt=attempt,
        dispatch_key=extra.get("dispatch_key", "k"),
        build_id=extra.get("build_id", "b1"),
        build_number=1,
        build_url="u",
        job_url=None,
        results=None,
        error=None,
        updated_at=datetime.now(UTC),
    )


def test_a_trusted_head_gets_one_build_for_its_smoke_steps_and_one_job_per_benchmark() -> None:
    result = plan([SMOKE, SMOKE2, BENCH], TRUSTED, {})
    smoke, head_bench = result.dispatches
    assert smoke.step_keys == ("v1-attention-b200", "kernels-b200") and smoke.commit_sha == HEAD
    assert (head_bench.side, head_bench.commit_sha) == ("head", HEAD)
    # Base and head run in that one job (prbot bench run), so it is told the merge base.
    assert head_bench.env == {
        "PRBOT_BENCHMARK_RUNS": str(DEFAULT_ROUNDS),
        "PRBOT_BENCHMARK_COMPARE": "base",
        "PRBOT_BENCHMARK_BASE_COMMIT": BASE,
        "PRBOT_BENCHMARK_CONFIG": BENCH.config,
        "PRBOT_BENCHMARK_BACKENDS": "TOKENSPEED_MLA",
    }
    assert all(attempt == 1 for d in result.dispatches for _, attempt in d.jobs)
    assert len({d.dispatch_key for d in result.dispatches}) == 2 and not result.awaiting


def test_an_untrusted_head_waits_whatever_asks() -> None:
    for mode in ("event", "recheck", "recheck_all", "approval"):
        result = plan([SMOKE, BENCH], UNTRUSTED, {}, mode=mode)
        assert not result.dispatches
        assert [s.key.name for s in result.awaiting] == [SMOKE.name, BENCH.name]


def test_an_approved_head_dispatches_and_its_author_cannot_rerun_failures() -> None:
    approved = dataclasses.replace(UNTRUSTED, approvers=("maint",))
    assert plan([SMOKE], approved, {}).creates == 1
    failed = {(SMOKE.name, "head"): record(SMOKE, "failed")}
    assert plan([SMOKE], approved, failed, mode="recheck").creates == 0
    # A maintainer's new approval re-runs what failed.
    again = plan([SMOKE], approved, failed, mode="approval")
    assert [attempt for _, attempt in again.dispatches[0].jobs] == [2]


def test_a_replay_dispatches_nothing_twice() -> None:
    for state in ("queued", "running", "passed", "failed"):
        records = {(SMOKE.name, "head"): record(SMOKE, state)}
        assert plan([SMOKE], TRUSTED, records).creates == 0


def test_recheck_reruns_failed_and_missing_and_recheck_all_passed_too() -> None:
    records = {
        (SMOKE.name, "head"): record(SMOKE, "passed"),
        (SMOKE2.name, "head"): record(SMOKE2, "timed_out", attempt=2),
    }
    wanted = [SMOKE, SMOKE2, BENCH]
    result = plan(wanted, TRUSTED, records, mode="recheck")
    smoke = result.dispatches[0]
    assert [(s.key.name, a) for s, a in smoke.jobs] == [(SMOKE2.name, 3)]
    assert result.creates == 2  # the failed smoke step, and the missing benchmark's one job
    result = plan(wanted, TRUSTED, records, mode="recheck_all")
    assert [(s.key.name, a) for s, a in result.dispatches[0].jobs] == [
        (SMOKE.name, 2),
        (SMOKE2.name, 3),
    ]


def test_dispatch_keys_are_keyed_with_prbots_secret() -> None:
    # The same claim planned twice (two workers) gets one key, so one build; another
    # installation's secret gives another key, and none is computable without a secret.
    (first,) = plan([SMOKE], TRUSTED, {}).dispatches
    (again,) = plan([SMOKE], TRUSTED, {}).dispatches
    (other,) = planner.plan([SMOKE], TRUSTED, {}, key_secret=b"elsewhere").dispatches
    assert first.dispatch_key == again.dispatch_key != other.dispatch_key
    assert first.dispatch_key.startswith("prbot-") and len(first.dispatch_key) == 38
    with pytest.raises(ValueError, match="secret"):
        planner.plan([SMOKE], TRUSTED, {}, key_secret=b"")


def test_a_claim_without_a_build_is_resumed_not_redispatched() -> None:
    records = {(SMOKE.name, "head"): record(SMOKE, "queued", build_id=None, dispatch_key="k7")}
    result = plan([SMOKE], TRUSTED, records)
    assert result.resume == ["k7"] and result.creates == 0


def test_no_base_run_is_reused_and_a_job_without_a_step_is_only_shown() -> None:
    # A base run from another build ran on another GPU at another time: never paired.
    result = plan([BENCH], TRUSTED, {}, reusable_base=frozenset({BENCH.name}))
    assert [d.side for d in result.dispatches] == ["head"] and result.reused_base == []
    stepless = dataclasses.replace(BENCH, step_key=None)
    result = plan([stepless], TRUSTED, {})
    assert not result.dispatches and "no step key" in result.problems[0]


def test_from_finding_reads_the_contract_fields() -> None:
    finding = {
        "name": "MLA decode benchmark",
        "kind": "benchmark",
        "hardware": "b200",
        "engine": "buildkite",
        "reason": "x",
        "step_key": "s",
        "backends": ["TOKENSPEED_MLA"],
        "config": "c.yaml",
        "status": "selected",
    }
    job = WantedJob.from_finding(finding)
    assert job.backends == ("TOKENSPEED_MLA",) and job.config == "c.yaml" and job.step_key == "s"


def test_a_new_backend_is_one_job_against_its_incumbents_on_the_head() -> None:
    new = dataclasses.replace(BENCH, compare="backends", against=("FLASHMLA", "CUTLASS_MLA"))
    (job,) = plan([new], TRUSTED, {}).dispatches
    assert job.commit_sha == HEAD
    assert job.env["PRBOT_BENCHMARK_COMPARE"] == "backends"
    assert job.env["PRBOT_BENCHMARK_AGAINST"] == "FLASHMLA,CUTLASS_MLA"
    assert "PRBOT_BENCHMARK_BASE_COMMIT" not in job.env
    finding = {"name": "b", "kind": "benchmark", "compare": "backends", "against": ["FLASHMLA"]}
    wanted = WantedJob.from_finding(finding)
    assert (wanted.compare, wanted.against) == ("backends", ("FLASHMLA",))


def test_a_new_backend_with_no_incumbent_is_never_dispatched() -> None:
    alone = dataclasses.replace(BENCH, compare="backends", against=())
    result = plan([SMOKE, alone], TRUSTED, {})
    assert [d.step_keys for d in result.dispatches] == [("v1-attention-b200",)]
    assert result.problems == [
        "MLA decode benchmark: a new backend with no incumbent to run against"
    ]
    against = dataclasses.replace(alone, against=("FLASHMLA",))
    (bench,) = plan([against], TRUSTED, {}).dispatches
    assert bench.env["PRBOT_BENCHMARK_AGAINST"] == "FLASHMLA"
