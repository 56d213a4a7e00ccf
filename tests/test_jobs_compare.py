"""Base/head benchmark verdicts: the readable rule, and its error rates on seeded data."""

import math
import random

from bot.jobs.benchmark_results import ResultError, parse_results, samples_from_runs
from bot.jobs.compare import FAILED, IMPROVEMENT, INCONCLUSIVE, REGRESSION, UNCHANGED, compare

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
        clean += all(c.verdict == UNCHANGED for c in comparisons)
    assert clean >= 190, f"{200 - clean} of 200 A/A seeds flagged something"


def test_each_ratio_comes_with_an_interval_that_holds_it() -> None:
    (comparison,) = compare({"x": ([1.00, 1.02, 0.98, 1.01], [1.21, 1.19, 1.20, 1.22])})
    assert comparison.verdict == REGRESSION
    assert comparison.low < comparison.ratio < comparison.high
    assert 1.15 < comparison.low and comparison.high < 1.26
    assert comparison.reason.endswith("slower, significant")
    faster = compare({"x": ([1.21, 1.19, 1.20, 1.22], [1.00, 1.02, 0.98, 1.01])})
    assert faster[0].verdict == IMPROVEMENT


def test_a_significant_change_under_the_factor_is_not_a_regression() -> None:
    (comparison,) = compare({"x": ([1.000, 1.001, 0.999], [1.020, 1.021, 1.019])})
    assert comparison.p_value < 0.01
    assert comparison.verdict == UNCHANGED
    assert "under 5%" in comparison.reason


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
