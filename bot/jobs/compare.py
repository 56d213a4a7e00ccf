"""Base-versus-head benchmark verdicts a maintainer can read and trust.

The rule, after asv's: a configuration is a **regression** when head is at least ``factor``
slower than base (default 5%) **and** the difference is significant. Significance is Welch's
t-test on the logarithms of the per-run mean times (timings are multiplicative, so the log
makes the ratio the natural quantity), with the Benjamini-Hochberg procedure across the
configurations of one comparison: a decode sweep has dozens of batch specs, and testing each
at 5% alone would flag something on most A/A runs. Each ratio is shown with its 95% interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.jobs.stats import benjamini_hochberg, t_quantile, welch

REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
INCONCLUSIVE = "inconclusive"
FAILED = "failed"


@dataclass(frozen=True)
class Comparison:
    """One configuration (backend × batch spec): the contract's comparison entry."""

    config: str
    base: float | None  # geometric mean of the base runs' mean times, seconds
    head: float | None
    ratio: float | None  # head / base: above 1 is slower
    low: float | None  # the ratio's 95% interval
    high: float | None
    verdict: str
    p_value: float | None
    runs: tuple[int, int]  # usable runs (base, head)
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "config": self.config,
            "base": self.base,
            "head": self.head,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "verdict": self.verdict,
            "p_value": self.p_value,
            "runs": list(self.runs),
            "reason": self.reason,
        }


def _usable(times: Sequence[float]) -> list[float]:
    # A failed run reports mean_time inf (or an error and no time).
    return [t for t in times if isinstance(t, int | float) and math.isfinite(t) and t > 0]


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def compare(
    samples: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    factor: float = 0.05,
    alpha: float = 0.05,
) -> list[Comparison]:
    """A verdict per configuration from ``{config: (base run times, head run times)}``."""
    tested: dict[str, tuple[list[float], list[float], float, float, float, float]] = {}
    results: dict[str, Comparison] = {}
    for config, (base_raw, head_raw) in samples.items():
        base, head = _usable(base_raw), _usable(head_raw)
        runs = (len(base), len(head))
        if not base or not head:
            side = "base" if not base else "head"
            total = len(base_raw) if side == "base" else len(head_raw)
            results[config] = Comparison(
                config,
                _geometric_mean(base) if base else None,
                _geometric_mean(head) if head else None,
                None,
                None,
                None,
                FAILED,
                None,
                runs,
                f"{side} failed in {total} of {total} runs",
            )
            continue
        if len(base) < 2 or len(head) < 2:
            ratio = _geometric_mean(head) / _geometric_mean(base)
            results[config] = Comparison(
                config,
                _geometric_mean(base),
                _geometric_mean(head),
                ratio,
                None,
                None,
                INCONCLUSIVE,
                None,
                runs,
                "needs at least 2 runs per side",
            )
            continue
        test = welch([math.log(t) for t in base], [math.log(t) for t in head])
        margin = t_quantile(0.975, test.df) * test.standard_error
        tested[config] = (
            base,
            head,
            test.p_value,
            math.exp(test.difference),
            math.exp(test.difference - margin),
            math.exp(test.difference + margin),
        )
    significant = dict(
        zip(tested, benjamini_hochberg([v[2] for v in tested.values()], alpha), strict=True)
    )
    for config, (base, head, p_value, ratio, low, high) in tested.items():
        if significant[config] and ratio >= 1 + factor:
            verdict, reason = REGRESSION, f"{(ratio - 1):.1%} slower, significant"
        elif significant[config] and ratio <= 1 / (1 + factor):
            verdict, reason = IMPROVEMENT, f"{(1 - ratio):.1%} faster, significant"
        elif significant[config]:
            verdict, reason = UNCHANGED, f"a significant change under {factor:.0%}"
        else:
            verdict, reason = UNCHANGED, "within noise"
        results[config] = Comparison(
            config,
            _geometric_mean(base),
            _geometric_mean(head),
            ratio,
            low,
            high,
            verdict,
            p_value,
            (len(base), len(head)),
            reason,
        )
    return [results[config] for config in samples]
