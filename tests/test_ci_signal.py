"""bot.jobs.ci_signal: a head's failed steps sorted as new, flaky, broken_trunk or unknown."""

from __future__ import annotations

from bot.jobs.buildkite_steps import generated_key
from bot.jobs.ci_history import read_history
from bot.jobs.ci_signal import (
    BROKEN_TRUNK,
    FLAKY,
    NEW,
    UNKNOWN,
    SignalRules,
    classify_build,
)
from bot.testing.buildkite_shapes import block, build, history, step_jobs, trigger, waiter

HEAD_SHA = "f" * 40


def head_build(steps: dict[str, str], *, keyless=(), names=None) -> dict:
    jobs = [waiter(), block(), trigger()]
    for key, letter in steps.items():
        label = (names or {}).get(key, key)
        jobs.extend(step_jobs(5000, None if key in keyless else key, letter, name=label))
    return build(5000, jobs, branch="feature", commit=HEAD_SHA)


def classify(steps, patterns, *, rules=None, merge_base=None, **kwargs):
    past = read_history(history(patterns, **kwargs), "main")
    return {
        c.name: c for c in classify_build(head_build(steps), past, rules, merge_base=merge_base)
    }


def test_a_step_healthy_on_main_that_fails_twice_on_the_head_is_new_and_confirmed():
    found = classify({"kernels": "X", "basic": "P"}, {"kernels": "PPPPPPPPPP", "basic": "P" * 10})
    assert list(found) == ["kernels"]
    result = found["kernels"]
    assert result.classification == NEW
    assert result.confirmed
    assert result.base_builds_seen == 10
    assert result.base_job_url.startswith("https://buildkite.com/acme/ci/builds/1000#")
    assert "passed in 10 of the last 10" in result.reason


def test_a_single_failure_on_the_head_is_new_but_not_confirmed():
    result = classify({"kernels": "F"}, {"kernels": "P" * 10})["kernels"]
    assert result.classification == NEW
    assert not result.confirmed
    assert "not retried" in result.reason


def test_failed_then_passed_on_a_retry_of_the_head_is_flaky_without_any_history():
    result = classify({"kernels": "R"}, {})["kernels"]
    assert result.classification == FLAKY
    assert result.state == "passed"
    assert [e["state"] for e in result.evidence] == ["failed", "passed"]


def test_failing_in_the_latest_builds_of_main_is_broken_trunk_with_their_links():
    result = classify({"kernels": "F"}, {"kernels": "FFPPPPPP"})["kernels"]
    assert result.classification == BROKEN_TRUNK
    assert [e["build_number"] for e in result.evidence] == [1000, 999]
    assert all(
        e["job_url"].startswith("https://buildkite.com/acme/ci/builds/") for e in result.evidence
    )


def test_broken_trunk_looks_at_or_before_the_merge_base_and_says_when_main_was_fixed_since():
    # Builds 1000 and 999 (after the merge base, 998) pass; 998 and 997 failed.
    patterns = {"kernels": "PPFFPPPP"}
    merge_base = f"{998:040x}"
    result = classify({"kernels": "X"}, patterns, merge_base=merge_base)["kernels"]
    assert result.classification == BROKEN_TRUNK
    assert "at or before the merge base" in result.reason
    assert "passed since in #1000" in result.reason
    # Without the merge base the latest builds pass: its own failure.
    assert classify({"kernels": "X"}, patterns)["kernels"].classification == NEW


def test_broken_after_the_merge_base_is_broken_trunk_too():
    merge_base = f"{996:040x}"
    result = classify({"kernels": "F"}, {"kernels": "FFFPPPPP"}, merge_base=merge_base)
    assert result["kernels"].classification == BROKEN_TRUNK
    assert "after the merge base" in result["kernels"].reason


def test_a_step_that_flips_on_main_is_flaky_with_each_flip_as_evidence():
    result = classify({"kernels": "X"}, {"kernels": "PPFPPPRPPPPP"})["kernels"]
    assert result.classification == FLAKY
    whys = [e["why"] for e in result.evidence]
    assert whys == [
        "failed alone between passes",
        "failed, then passed on a retry in the same build",
    ]
    assert result.counts["base_flakes"] == 2


def test_one_flip_is_not_enough_and_the_threshold_comes_from_the_rules():
    patterns = {"kernels": "PPFPPPPPPP"}
    assert classify({"kernels": "F"}, patterns)["kernels"].classification == NEW
    rules = SignalRules(flaky_failures=1)
    assert classify({"kernels": "F"}, patterns, rules=rules)["kernels"].classification == FLAKY


def test_a_failure_and_a_pass_of_the_same_commit_on_main_is_a_flip():
    builds = history({"kernels": "PFPPPP"})
    builds[1]["commit"] = builds[0]["commit"]  # a rebuild of the same commit failed
    builds[3]["jobs"] = [j for j in builds[3]["jobs"] if j["type"] != "script"]
    builds[3]["jobs"] += step_jobs(997, "kernels", "R")
    past = read_history(builds, "main")
    result = classify_build(head_build({"kernels": "F"}), past)[0]
    assert result.classification == FLAKY
    assert "failed; another build of the same commit passed" in [e["why"] for e in result.evidence]


def test_soft_failures_are_not_failures_on_the_head_or_on_main():
    found = classify({"lint": "S", "kernels": "F"}, {"kernels": "SSPSPSPP", "lint": "SSSS"})
    assert list(found) == ["kernels"]
    assert found["kernels"].classification == NEW


def test_timed_out_is_a_failure_and_canceled_is_not():
    found = classify({"kernels": "T", "other": "C"}, {"kernels": "P" * 5, "other": "P" * 5})
    assert list(found) == ["kernels"]
    assert found["kernels"].state == "timed_out"


def test_waiter_block_and_trigger_jobs_are_not_steps():
    runs = classify_build(head_build({}), read_history(history({"kernels": "PPP"}), "main"))
    assert runs == []


def test_no_history_is_unknown_with_the_reason():
    result = classify({"kernels": "F"}, {})["kernels"]
    assert result.classification == UNKNOWN
    assert result.reason == "no builds of main to compare with"


def test_a_step_main_never_ran_is_unknown():
    result = classify({"new-step": "F"}, {"kernels": "PPPP"})["new-step"]
    assert result.classification == UNKNOWN
    assert "did not run in the 4 build(s) of main" in result.reason


def test_too_few_runs_on_main_is_unknown_never_new():
    result = classify({"kernels": "X"}, {"kernels": "P-C-"})["kernels"]
    assert result.classification == UNKNOWN
    assert "1 completed run(s)" in result.reason


def test_a_build_without_jobs_is_one_unknown():
    past = read_history(history({"kernels": "PPP"}), "main")
    for body in (build(7, None), build(7, [])):
        (result,) = classify_build(body, past)
        assert result.classification == UNKNOWN
        assert "no jobs" in result.reason


def test_keyless_jobs_match_by_the_key_vllms_generator_derives_from_the_label():
    label = "V1 attention (B200)"
    assert generated_key(label) == "v1-attention-b200"
    builds = history(
        {"v1-attention-b200": "PPPPP"},
        keyless=["v1-attention-b200"],
        names={"v1-attention-b200": label},
    )
    assert all(j.get("step_key") is None for b in builds for j in b["jobs"])
    past = read_history(builds, "main")
    # The head's pipeline has a key now; main's older builds have only the label.
    (result,) = classify_build(head_build({"v1-attention-b200": "X"}), past)
    assert result.classification == NEW
    assert result.base_builds_seen == 5


def test_a_job_with_neither_key_nor_name_is_unknown_not_new():
    body = build(5000, step_jobs(5000, None, "F", name=""), branch="feature")
    (result,) = classify_build(body, read_history(history({"kernels": "PPP"}), "main"))
    assert result.classification == UNKNOWN
    assert "neither step_key nor name" in result.reason


def test_a_history_read_that_stopped_half_way_never_makes_a_new():
    builds = history({"kernels": "PPPPP", "flips": "PFPFP"})
    past = read_history(builds, "main", complete=False, stopped="Buildkite timed out on page 2")
    found = {c.name: c for c in classify_build(head_build({"kernels": "X", "flips": "F"}), past)}
    assert found["kernels"].classification == UNKNOWN
    assert "Buildkite timed out on page 2" in found["kernels"].reason
    # What the part read does show still stands.
    assert found["flips"].classification == FLAKY


def test_results_come_new_first_and_serialize_to_the_cli_contract():
    found = classify_build(
        head_build({"a-flaky": "R", "z-new": "X", "m-broken": "F"}),
        read_history(history({"z-new": "PPPP", "m-broken": "FFPP"}), "main"),
    )
    assert [c.classification for c in found] == [NEW, BROKEN_TRUNK, FLAKY]
    data = found[0].to_json()
    assert {"step_key", "name", "state", "classification", "evidence", "base_builds_seen"} <= set(
        data
    )
