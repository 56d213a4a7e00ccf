"""bot.jobs.ci_history: a base branch's builds read as steps, bounded, other branches dropped."""

from __future__ import annotations

import pytest

from bot.jobs.buildkite_steps import generated_key
from bot.jobs.ci_history import read_history, step_identity, step_runs
from bot.jobs.ci_signal import BROKEN_TRUNK, NEW, UNKNOWN, classify_build
from bot.testing.buildkite_shapes import build, history, step_jobs, waiter

HEAD_SHA = "f" * 40


def head_build(steps: dict[str, str]) -> dict:
    jobs = [waiter()]
    for key, letter in steps.items():
        jobs.extend(step_jobs(5000, key, letter))
    return build(5000, jobs, branch="feature", commit=HEAD_SHA)


def test_parallel_jobs_are_one_step_each():
    jobs = step_jobs(5000, "shard", "F", parallel_group_index=0)
    jobs += step_jobs(5000, "shard", "P", parallel_group_index=1)
    assert step_identity(jobs[0]) == "shard#0"
    results = classify_build(build(5000, jobs), read_history([], "main"))
    assert [r.classification for r in results] == [UNKNOWN]


def test_builds_of_other_branches_are_ignored_and_said():
    builds = history({"kernels": "FFFF"}, branch="feature-x") + history(
        {"kernels": "PPPP"}, newest=900
    )
    past = read_history(builds, "main")
    assert len(past.builds) == 4
    assert "4 build(s) of other branches ignored" in past.notes
    (result,) = classify_build(head_build({"kernels": "X"}), past)
    assert result.classification == NEW


def test_ten_thousand_builds_are_read_only_as_far_as_the_bound():
    builds = history({"kernels": "P" * 10_000}, newest=10_000)
    past = read_history(builds, "main", limit=50)
    assert [b["number"] for b in past.builds] == list(range(10_000, 9_950, -1))
    assert "the newest 50 builds of main were read" in past.notes
    (result,) = classify_build(head_build({"kernels": "X"}), past)
    assert (result.classification, result.base_builds_seen) == (NEW, 50)


def test_a_listing_out_of_order_is_read_newest_first():
    builds = history({"kernels": "FFPPPP"})
    past = read_history([builds[3], builds[0], builds[5], builds[1], builds[2], builds[4]], "main")
    assert [b["number"] for b in past.builds] == [1000, 999, 998, 997, 996, 995]
    (result,) = classify_build(head_build({"kernels": "F"}), past)
    assert result.classification == BROKEN_TRUNK


def test_malformed_entries_are_skipped_not_a_crash():
    builds = [None, "x", {"branch": "main"}, {"branch": "main", "number": "7", "jobs": []}]
    builds += history({"kernels": "PPP"})
    builds[-1]["jobs"].append({"type": "script", "state": 3, "name": None, "step_key": 5})
    past = read_history(builds, "main")
    assert len(past.builds) == 3
    (result,) = classify_build(head_build({"kernels": "F"}), past)
    assert result.classification == NEW


@pytest.mark.parametrize(
    ("label", "key"),
    [
        ("Kernels Attention Test %N", "kernels-attention-test-n"),
        ("LoRA TP Test (Distributed)", "lora-tp-test-distributed"),
        ("Distributed Tests (2 GPUs)", "distributed-tests-2-gpus"),
        ("Python-only Installation Test", "python-only-installation-test"),
        ("Entrypoints Test (API Server 1/2)", "entrypoints-test-api-server-1-2"),
        ("V1 e2e + engine", "v1-e2e---engine"),
        ("Quantized Models Test: 3.5", "quantized-models-test--3-5"),
    ],
)
def test_generated_key_is_vllms_spelling(label, key):
    assert generated_key(label) == key


def test_a_steps_attempts_follow_the_retry_chain_whatever_the_listing_order():
    retried, retry = step_jobs(7, "kernels", "X")
    runs, _ = step_runs(build(7, [retry, waiter(), retried]))
    assert [a.job_id for a in runs["kernels"].attempts] == [retried["id"], retry["id"]]
    assert runs["kernels"].failures == 2
    assert runs["kernels"].failed


def test_a_retry_chain_that_loops_is_read_once():
    first, second = step_jobs(7, "kernels", "X")
    second["retried_in_job_id"] = first["id"]  # a cycle no real build has
    runs, _ = step_runs(build(7, [first, second]))
    assert len(runs["kernels"].attempts) == 2
