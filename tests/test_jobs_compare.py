"""Base/head benchmark verdicts: the readable rule, and its error rates on seeded data."""

import math
import random

from bot.jobs.benchmark_results import ResultError, parse_results, samples_from_runs
from bot.jobs.compare import (
    FAILED,
    IMPROVEMENT,
    INCONCLUSIVE,
    REGRESSION,
    UNCHANGED,
    compare,
    compare_paired,
    withhold,
)

CONFIGS = [f"FLASHMLA {n}q1s{k}k" for n in (16, 32, 64) for k in (1, 2, 4, 8)]


def seeded_runs(
    rng: random.Random, runs: int, *, slowdown: float = 0.0, cv: float = 0.03
) -> dict[str, tuple[list[float], list[float]]]:
    """Per-run mean times, log-normal around each configuration's true time."""
    samples = {}
    for index, config in enumerate(CONFIGS):
        true = 1e-4 * (1 + index)
        base = [true * math.exp(rng.gauss(0, cv)) for _ in range(runs)]
        head = [true * (1 + slowdown) * math.exp(rng.gauss(0, cv)) for _ in range(runs)]
        samples[config] = (base, head)
    return samples


def test_a_real_ten_percent_slowdown_is_flagged() -> None:
    rng = random.Random(41778)
    verdicts = [c.verdict for c in compare(seeded_runs(rng, 5, slowdown=0.10))]
    assert verdicts.count(REGRESSION) == len(CONFIGS)


def test_a_a_runs_flag_nothing_in_at_least_95_percent_of_seeds() -> None:
    clean = 0
    for seed in range(200):
        comparisons = compare(seeded_runs(random.Random(seed), 5))
        clean += not any(c.verdict in (REGRESSION, IMPROVEMENT) for c in comparisons)
        for c in comparisons:
            # Unchanged is a claim about the interval, never the absence of a flag.
            if c.verdict == UNCHANGED:
                assert 1 / 1.05 <= c.low and c.high <= 1.05
    assert clean >= 190, f"{200 - clean} of 200 A/A seeds flagged something"


def test_each_ratio_comes_with_an_interval_that_holds_it() -> None:
    (comparison,) = compare({"x": ([1.00, 1.02, 0.98, 1.01], [1.21, 1.19, 1.20, 1.22])})
    assert comparison.verdict == REGRESSION
    assert comparison.low < comparison.ratio < comparison.high
    assert 1.15 < comparison.low and comparison.high < 1.26
    assert comparison.reason.startswith("20% slower, significant (95% interval 1.171–1.234)")
    faster = compare({"x": ([1.21, 1.19, 1.20, 1.22], [1.00, 1.02, 0.98, 1.01])})
    assert faster[0].verdict == IMPROVEMENT


def test_a_significant_change_under_the_factor_is_not_a_regression() -> None:
    (comparison,) = compare({"x": ([1.000, 1.001, 0.999], [1.020, 1.021, 1.019])}, factor=0.05)
    assert comparison.p_value < 0.01
    assert comparison.verdict == UNCHANGED
    assert "2.0% slower, significant, but 95% interval 1.018–1.022 lies within ±5%" in (
        comparison.reason
    )


def test_failed_and_thin_configurations_are_said_so() -> None:
    found = {
        c.config: c
        for c in compare(
            {
                "broken": ([1.0, 1.1], [math.inf, math.inf]),
                "single": ([1.0], [1.5]),
            }
        )
    }
    assert found["broken"].verdict == FAILED
    assert found["broken"].reason == "head failed in 2 of 2 runs"
    assert found["single"].verdict == INCONCLUSIVE
    assert found["single"].ratio == 1.5


def test_results_json_is_read_per_backend_and_batch_spec_with_swept_parameters() -> None:
    text = """[
      {"config": {"backend": "FLASHMLA", "batch_spec": "16q1s1k", "num_q_heads": 128},
       "mean_time": 0.0011, "std_time": 0.00001, "error": null},
      {"config": {"backend": "FLASHMLA", "batch_spec": "16q1s1k", "num_q_heads": 64},
       "mean_time": 0.0007, "std_time": 0.00001, "error": null},
      {"config": {"backend": "TOKENSPEED_MLA", "batch_spec": "16q1s1k", "num_q_heads": 64},
       "mean_time": Infinity, "std_time": 0, "error": "CUDA out of memory"}
    ]"""
    times = parse_results(text)
    assert times == {
        "FLASHMLA 16q1s1k (num_q_heads=128)": 0.0011,
        "FLASHMLA 16q1s1k (num_q_heads=64)": 0.0007,
        "TOKENSPEED_MLA 16q1s1k (num_q_heads=64)": math.inf,
    }
    samples = samples_from_runs([times, times], [times, {}])
    assert samples["FLASHMLA 16q1s1k (num_q_heads=64)"] == ([0.0007, 0.0007], [0.0007, math.inf])


def test_bad_results_are_one_line() -> None:
    for text, message in (("{", "not JSON"), ('{"a": 1}', "expected a list")):
        try:
            parse_results(text, "head-run-2.json")
        except ResultError as exc:
            assert str(exc).startswith("head-run-2.json: ") and message in str(exc)
        else:
            raise AssertionError("no error")
    deep = "[" * 100_000 + "]" * 100_000
    try:
        parse_results(deep, "deep.json")
    except ResultError as exc:
        assert "not JSON" in str(exc)


def test_noise_wider_than_the_factor_is_inconclusive_with_what_could_be_seen() -> None:
    # Launch-bound decodes on one H200 spread ~20% from run to run: no claim either way.
    rng = random.Random(7)
    base = [60e-6 * math.exp(rng.gauss(0, 0.2)) for _ in range(5)]
    head = [60e-6 * math.exp(rng.gauss(0, 0.2)) for _ in range(5)]
    (comparison,) = compare({"FLASH_ATTN 8q1s1k": (base, head)}, factor=0.05)
    assert comparison.verdict == INCONCLUSIVE
    assert comparison.reason.startswith("too noisy to see a 5% change: these runs could detect")
    assert comparison.detectable > 0.2
    assert comparison.low < 1 / 1.05 or comparison.high > 1.05


def test_paired_rounds_cancel_what_a_round_shares() -> None:
    # Each round drifts by up to ±10% (clocks, a neighbour), both sides alike; head is 6% slower.
    rng = random.Random(3)
    drift = [math.exp(rng.uniform(-0.1, 0.1)) for _ in range(5)]
    rounds = {
        n: (1e-3 * d, 1.06e-3 * d * math.exp(rng.gauss(0, 0.003))) for n, d in enumerate(drift)
    }
    (paired_result,) = compare_paired({"CUDNN q2k": rounds})
    assert paired_result.verdict == REGRESSION and paired_result.paired
    assert paired_result.low > 1.05 and paired_result.runs == (5, 5)
    samples = {"CUDNN q2k": ([b for b, _ in rounds.values()], [h for _, h in rounds.values()])}
    (unpaired_result,) = compare(samples)
    # The same runs with the pairs thrown away: the drift counts as noise.
    width = paired_result.high - paired_result.low
    assert width * 5 < unpaired_result.high - unpaired_result.low


def test_paired_rounds_left_out_are_named() -> None:
    rounds = {
        1: (1.0, 1.0),
        2: (1.0, math.nan),
        3: (None, 1.0),
        4: (1.001, 1.0),
        5: (1.0, -2.0),
        6: (0.999, 1.001),
    }
    (comparison,) = compare_paired({"x": rounds})
    assert comparison.runs == (3, 3)
    assert "rounds left out: head time nan in round 2, base lacks it in round 3, " in (
        comparison.reason
    )
    (thin,) = compare_paired({"x": {1: (1.0, 1.1), 2: (1.0, math.inf)}})
    assert thin.verdict == INCONCLUSIVE
    assert thin.reason.startswith("1 usable round; needs at least 2; rounds left out: head failed")
    (missing,) = compare_paired({"x": {1: (1.0, None), 2: (1.0, None)}})
    assert missing.verdict == FAILED and missing.reason == "no head run has this configuration"


def test_withheld_comparisons_keep_their_ratio_and_say_why() -> None:
    found = compare_paired(
        {"x": {n: (1.0, 1.2 + n / 1000) for n in range(5)}, "y": {1: (1.0, None)}}
    )
    held = withhold(found, "base ran on GPU-a, head on GPU-b: different GPUs are not compared")
    assert [c.verdict for c in held] == [INCONCLUSIVE, FAILED]
    assert held[0].ratio == found[0].ratio
    assert held[0].reason.startswith("base ran on GPU-a, head on GPU-b: different GPUs are not")


def test_a_time_no_kernel_takes_is_left_out_and_named() -> None:
    # A red team's results file gave a head time of 1e308 s: it was a usable round.
    rounds = {1: (1e-3, 1e308), 2: (1e-3, 1.01e-3), 3: (1.01e-3, 1e-3), 4: (1e-3, 1e-3)}
    (comparison,) = compare_paired({"x": rounds})
    assert comparison.runs == (3, 3)
    assert "head time 1e+308 in round 1" in comparison.reason
