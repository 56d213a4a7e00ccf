"""One job's two directories as verdicts: pairs by round, the GPU check, and bad input as a
clear failed or inconclusive verdict with its reason (never an exception)."""

import json
import math
import random

from bot.jobs.compare import FAILED, INCONCLUSIVE, REGRESSION, UNCHANGED
from bot.jobs.paired_runs import BY_BATCH_SPEC, Side, sides_from_files, verdicts
from tests.bench_helpers import UUID_A, UUID_B, entry, machine_csv, run_json


def job(rounds=5, *, seed=0, slowdown=0.0, head_uuid=UUID_A, base_uuid=UUID_A):
    rng = random.Random(seed)
    base, head = Side(), Side()
    for n in range(1, rounds + 1):
        base.runs[n] = run_json(rng).encode()
        head.runs[n] = run_json(rng, slowdown=slowdown).encode()
    base.machine = machine_csv(base_uuid).encode()
    head.machine = machine_csv(head_uuid).encode()
    return base, head


def by_config(result):
    return {c.config: c for c in result.comparisons}


def test_identical_code_is_unchanged_where_quiet_and_never_flagged() -> None:
    result = verdicts(*job(seed=1))
    found = by_config(result)
    assert found["CUDNN q2k"].verdict == UNCHANGED
    assert not any(c.verdict == REGRESSION for c in result.comparisons)
    assert all(c.paired and c.runs == (5, 5) for c in result.comparisons)
    assert result.rounds == 5 and result.problems == []
    assert result.backends == {"base": ["CUDNN", "FLASH_ATTN"], "head": ["CUDNN", "FLASH_ATTN"]}


def test_a_ten_percent_slowdown_is_a_regression_everywhere_quiet() -> None:
    found = by_config(verdicts(*job(seed=2, slowdown=0.10)))
    for config in ("FLASH_ATTN q2k", "CUDNN q2k", "FLASH_ATTN q8k", "CUDNN q8k"):
        assert found[config].verdict == REGRESSION, found[config]


def test_two_gpus_are_never_compared_silently() -> None:
    result = verdicts(*job(head_uuid=UUID_B, slowdown=0.10))
    assert {c.verdict for c in result.comparisons} == {INCONCLUSIVE}
    reason = result.comparisons[0].reason
    assert reason.startswith(
        "base ran on NVIDIA H200 GPU-3f81f7ad, head on NVIDIA H200 GPU-697c774d: different GPUs "
        "are not compared"
    )
    allowed = verdicts(*job(head_uuid=UUID_B, slowdown=0.10), allow_different_gpus=True)
    quiet = by_config(allowed)["CUDNN q2k"]
    assert quiet.verdict == REGRESSION and not quiet.paired
    assert "compared unpaired (the rules allow different GPUs)" in quiet.reason


def test_a_missing_or_broken_machine_csv_cannot_vouch_for_the_gpu() -> None:
    base, head = job()
    head.machine = None
    result = verdicts(base, head)
    assert {c.verdict for c in result.comparisons} == {INCONCLUSIVE}
    assert result.comparisons[0].reason.startswith(
        "head has no machine.csv, so the two GPUs cannot be told the same"
    )
    base, head = job()
    base.machine = b"name;uuid\nH200;x\n"
    result = verdicts(base, head)
    assert {c.verdict for c in result.comparisons} == {INCONCLUSIVE}
    assert result.comparisons[0].reason.startswith(
        "the GPU cannot be told (base/machine.csv: the header is not nvidia-smi's answer"
    )
    base, head = job()
    base.machine = head.machine = None
    result = verdicts(base, head)
    assert by_config(result)["CUDNN q2k"].verdict == UNCHANGED
    assert by_config(result)["CUDNN q2k"].reason.endswith("; GPU not recorded")


def test_results_that_are_not_json_garbage_or_too_large_are_named() -> None:
    base, head = job()
    head.runs[2] = b"{not json"
    head.runs[3] = b"[1, 2, 3]"
    head.runs[4] = b"[" + b" " * 20_000_001 + b"]"
    result = verdicts(base, head)
    assert "head/run-2.json: not JSON (JSONDecodeError)" in result.problems
    assert "head/run-3.json: no configurations in it" in result.problems
    assert "head/run-4.json: over 20 MB" in result.problems
    assert "rounds 2, 3, 4 have a base run and no partner; left out" in result.problems
    assert result.rounds == 2
    assert all(c.runs == (2, 2) for c in result.comparisons)


def test_a_side_with_nothing_readable_fails_with_the_first_reason() -> None:
    base, head = job(2)
    head.runs = {1: b"", 2: b"nope"}
    (only,) = verdicts(base, head).comparisons
    assert only.verdict == FAILED
    assert (
        only.reason == "no head results could be read (head/run-1.json: not JSON (JSONDecodeError))"
    )
    (empty,) = verdicts(Side(), Side()).comparisons
    assert empty.verdict == FAILED and "no run-<round>.json" in empty.reason


def test_nan_inf_and_negative_times_leave_their_round_out() -> None:
    base, head = job(6, seed=4)
    rows = json.loads(head.runs[2])
    rows[3]["mean_time"] = math.nan
    head.runs[2] = json.dumps(rows).encode()
    rows = json.loads(head.runs[5])
    rows[3]["mean_time"] = -1.0
    head.runs[5] = json.dumps(rows).encode()
    rows = json.loads(base.runs[6])
    rows[3]["mean_time"] = math.inf
    base.runs[6] = json.dumps(rows).encode()
    found = by_config(verdicts(base, head))["CUDNN q2k"]
    assert found.runs == (3, 3)
    assert (
        "rounds left out: head time nan in round 2, head time -1.0 in round 5, base failed in"
        in (found.reason)
    )


def test_a_run_missing_half_its_configurations_and_configurations_on_one_side() -> None:
    base, head = job(4, seed=5)
    rows = json.loads(head.runs[1])
    head.runs[1] = json.dumps(rows[:3]).encode()
    for n in head.runs:
        rows = json.loads(head.runs[n])
        head.runs[n] = json.dumps([*rows, entry("TRITON", "q2k", 1e-4)]).encode()
    found = by_config(verdicts(base, head))
    assert found["CUDNN q2k"].runs == (3, 3)
    assert "head lacks it in round 1" in found["CUDNN q2k"].reason
    assert found["TRITON q2k"].verdict == FAILED
    assert found["TRITON q2k"].reason == "no base run has this configuration"


def test_one_round_is_inconclusive() -> None:
    result = verdicts(*job(1))
    assert {c.verdict for c in result.comparisons} == {INCONCLUSIVE}
    assert result.comparisons[0].reason.startswith("1 usable round; needs at least 2")


def test_a_new_backend_pairs_with_the_incumbent_by_batch_spec() -> None:
    rng = random.Random(6)
    base, head = Side(), Side()
    for n in range(1, 6):
        base.runs[n] = run_json(rng, backends=("FLASH_ATTN",)).encode()
        head.runs[n] = run_json(rng, backends=("CUDNN",)).encode()
    base.machine = head.machine = machine_csv().encode()
    result = verdicts(base, head, naming=BY_BATCH_SPEC)
    assert sorted(by_config(result)) == ["8q1s1k", "q2k", "q8k"]
    assert by_config(result)["q2k"].verdict == "improvement"
    assert result.backends == {"base": ["FLASH_ATTN"], "head": ["CUDNN"]}


def test_artifacts_are_sorted_into_their_sides() -> None:
    sides = sides_from_files(
        [
            ("bench/base/run-1.json", b"[]"),
            ("bench/head/run-1.json", b"[]"),
            ("head/machine.csv", b"x"),
            ("head/machine-end.csv", b"y"),
            ("logs/base-1.log", b"..."),
            ("base/run-x.json", b"[]"),
        ]
    )
    assert sides["base"].runs == {1: b"[]"} and sides["head"].runs == {1: b"[]"}
    assert (sides["head"].machine, sides["head"].machine_end) == (b"x", b"y")
