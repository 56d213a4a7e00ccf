"""Base-versus-head benchmark verdicts a maintainer can read and trust.

Timings are multiplicative, so everything is done on their logarithms and the ratio (head
over base) is the quantity shown, with its 95% interval. The rule:

- **regression** / **improvement**: head at least ``factor`` slower (faster) than base, by
  the point ratio, **and** significant after the Benjamini-Hochberg correction across the
  configurations of one job (a decode sweep has dozens of batch specs, and testing each at 5%
  alone would flag something on most A/A runs);
- **unchanged**: only when the whole 95% interval lies within the factor
  (``1/(1+factor) .. 1+factor``); a narrow interval, not the absence of a significant test,
  is what shows that nothing moved;
- **inconclusive**: anything else, with the reason: too noisy to see the factor (and the
  smallest change these runs could have seen), a significant change whose interval straddles
  the factor, too few rounds, or runs that must not be compared (two different GPUs);
- **failed**: one side has no usable time for the configuration.

Rounds of one job (base and head back to back on one GPU, each a fresh process) are compared
as pairs (``compare_paired``, the paired t-test on per-round log ratios): what the two runs of
a round share (clocks, temperature, a neighbour's load) cancels. Runs from two builds have no
pairs and go through Welch's test (``compare``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.jobs.stats import WelchResult, benjamini_hochberg, paired, t_quantile, welch

REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
INCONCLUSIVE = "inconclusive"
FAILED = "failed"
VERDICTS = (REGRESSION, IMPROVEMENT, UNCHANGED, INCONCLUSIVE, FAILED)
# The power at which the smallest detectable change is quoted.
POWER = 0.8
# The rules' defaults (``checks.jobs.benchmark``), chosen by the power calculation in
# benchmarks/bench_rounds_power.py and checked on an H200 (docs/benchmarks/gpu_verdicts.md):
# a regression needs the point ratio past 1 + factor, so a true 5% slowdown is caught
# reliably only with the factor below 5% and enough rounds to keep the ratio above it.
DEFAULT_FACTOR = 0.03
DEFAULT_ALPHA = 0.05
DEFAULT_ROUNDS = 10


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
    runs: tuple[int, int]  # usable runs (base, head); paired: both are the usable rounds
    reason: str
    # The smallest slowdown (as a fraction) these runs would flag as significant 80% of
    # the time, before the correction across configurations; None where nothing was tested.
    detectable: float | None = None
    paired: bool = False

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
            "detectable": self.detectable,
            "paired": self.paired,
        }


# The longest mean time (seconds) read as a kernel's: an hour per call is no kernel timing
# but a unit mix-up or a corrupt file (a 1e308 s head time was counted as a usable round and
# printed as a 309-digit figure); a CI job's own timeout ends long before.
MAX_TIME_SECONDS = 3600.0


def usable(value: object) -> bool:
    """A time that can be compared: a finite, positive number up to an hour (not NaN, inf,
    0, a bool or a time no kernel takes)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 < value <= MAX_TIME_SECONDS
    )


def _usable(times: Sequence[float | None]) -> list[float]:
    # A failed run reports mean_time inf (or an error and no time).
    return [t for t in times if usable(t)]  # type: ignore[misc]


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True)
class _Tested:
    base: float
    head: float
    runs: tuple[int, int]
    test: WelchResult
    note: str


def _interval(test: WelchResult) -> tuple[float, float, float]:
    margin = t_quantile(0.975, test.df) * test.standard_error
    return (
        math.exp(test.difference),
        math.exp(test.difference - margin),
        math.exp(test.difference + margin),
    )


def detectable_change(test: WelchResult) -> float:
    """The slowdown a test of this spread detects with 80% power at 5%, two-sided."""
    if test.standard_error == 0.0:
        return 0.0
    reach = (t_quantile(0.975, test.df) + t_quantile(POWER, test.df)) * test.standard_error
    return math.exp(reach) - 1.0


def _percent(fraction: float) -> str:
    return f"{fraction:.1%}" if abs(fraction) < 0.1 else f"{fraction:.0%}"


def _decide(
    config: str, tested: _Tested, significant: bool, factor: float, *, paired_runs: bool
) -> Comparison:
    ratio, low, high = _interval(tested.test)
    detectable = detectable_change(tested.test)
    upper, lower = 1.0 + factor, 1.0 / (1.0 + factor)
    interval = f"95% interval {low:.3f}–{high:.3f}"
    if significant and ratio >= upper:
        verdict, reason = REGRESSION, f"{_percent(ratio - 1)} slower, significant ({interval})"
    elif significant and ratio <= lower:
        verdict, reason = IMPROVEMENT, f"{_percent(1 - ratio)} faster, significant ({interval})"
    elif lower <= low and high <= upper:
        verdict = UNCHANGED
        reason = f"{interval} lies within ±{factor:.0%}"
        if significant:
            direction = "slower" if ratio > 1 else "faster"
            reason = f"{_percent(abs(ratio - 1))} {direction}, significant, but {reason}"
    elif significant:
        direction = "slower" if ratio > 1 else "faster"
        verdict = INCONCLUSIVE
        reason = (
            f"{_percent(abs(ratio - 1))} {direction}, significant, under the ±{factor:.0%} "
            f"factor but its {interval} reaches past it"
        )
    elif detectable > factor:
        verdict = INCONCLUSIVE
        reason = (
            f"too noisy to see a {factor:.0%} change: these runs could detect about "
            f"{_percent(detectable)} ({interval})"
        )
    else:
        verdict = INCONCLUSIVE
        reason = f"not significant, but the {interval} reaches past ±{factor:.0%}"
    if tested.note:
        reason += f"; {tested.note}"
    return Comparison(
        config,
        tested.base,
        tested.head,
        ratio,
        low,
        high,
        verdict,
        tested.test.p_value,
        tested.runs,
        reason,
        detectable,
        paired_runs,
    )


def _judge(
    order: Sequence[str],
    results: dict[str, Comparison],
    tested: dict[str, _Tested],
    *,
    factor: float,
    alpha: float,
    paired_runs: bool,
) -> list[Comparison]:
    significant = dict(
        zip(
            tested,
            benjamini_hochberg([t.test.p_value for t in tested.values()], alpha),
            strict=True,
        )
    )
    for config, entry in tested.items():
        results[config] = _decide(
            config, entry, significant[config], factor, paired_runs=paired_runs
        )
    return [results[config] for config in order]


def _untestable(
    config: str,
    base: Sequence[float],
    head: Sequence[float],
    runs: tuple[int, int],
    verdict: str,
    reason: str,
    *,
    paired_runs: bool,
) -> Comparison:
    base_mean = _geometric_mean(base) if base else None
    head_mean = _geometric_mean(head) if head else None
    ratio = head_mean / base_mean if base_mean and head_mean else None
    return Comparison(
        config,
        base_mean,
        head_mean,
        ratio,
        None,
        None,
        verdict,
        None,
        runs,
        reason,
        None,
        paired_runs,
    )


def _missing(side: str, values: Sequence[float | None]) -> str:
    total = len(values)
    absent = sum(1 for v in values if v is None)
    if absent == total:
        return f"no {side} run has this configuration"
    return (
        f"{side} failed in {total} of {total} runs"
        if not absent
        else (f"{side} failed in {total - absent} and lacks it in {absent} of {total} runs")
    )


def compare(
    samples: Mapping[str, tuple[Sequence[float | None], Sequence[float | None]]],
    *,
    factor: float = DEFAULT_FACTOR,
    alpha: float = DEFAULT_ALPHA,
    note: str = "unpaired runs",
) -> list[Comparison]:
    """Unpaired: a verdict per configuration from ``{config: (base times, head times)}``;
    ``note`` is added to every tested configuration's reason."""
    tested: dict[str, _Tested] = {}
    results: dict[str, Comparison] = {}
    for config, (base_raw, head_raw) in samples.items():
        base, head = _usable(base_raw), _usable(head_raw)
        runs = (len(base), len(head))
        if not base or not head:
            side, raw = ("base", base_raw) if not base else ("head", head_raw)
            results[config] = _untestable(
                config, base, head, runs, FAILED, _missing(side, raw), paired_runs=False
            )
            continue
        if len(base) < 2 or len(head) < 2:
            results[config] = _untestable(
                config,
                base,
                head,
                runs,
                INCONCLUSIVE,
                "needs at least 2 runs per side",
                paired_runs=False,
            )
            continue
        test = welch([math.log(t) for t in base], [math.log(t) for t in head])
        tested[config] = _Tested(_geometric_mean(base), _geometric_mean(head), runs, test, note)
    return _judge(list(samples), results, tested, factor=factor, alpha=alpha, paired_runs=False)


def _dropped_rounds(
    rounds: Sequence[int], pairs: Sequence[tuple[float | None, float | None]]
) -> str:
    bad = []
    for number, (base, head) in zip(rounds, pairs, strict=True):
        for side, value in (("base", base), ("head", head)):
            if value is None:
                bad.append(f"{side} lacks it in round {number}")
            elif not usable(value):
                what = "failed" if value == math.inf else f"time {value!r}"
                bad.append(f"{side} {what} in round {number}")
    if not bad:
        return ""
    shown = ", ".join(bad[:3]) + (f" (+{len(bad) - 3} more)" if len(bad) > 3 else "")
    return f"rounds left out: {shown}"


def compare_paired(
    rounds: Mapping[str, Mapping[int, tuple[float | None, float | None]]],
    *,
    factor: float = DEFAULT_FACTOR,
    alpha: float = DEFAULT_ALPHA,
    note: str = "",
) -> list[Comparison]:
    """Paired: ``{config: {round: (base time, head time)}}``, None where a run lacks it.

    A round counts for a configuration when both of its times are usable; ``note`` is added
    to every reason (e.g. which GPU ran the job).
    """
    tested: dict[str, _Tested] = {}
    results: dict[str, Comparison] = {}
    for config, by_round in rounds.items():
        numbers = sorted(by_round)
        pairs = [by_round[n] for n in numbers]
        good = [(b, h) for b, h in pairs if usable(b) and usable(h)]
        base = [b for b, _ in good]
        head = [h for _, h in good]
        dropped = _dropped_rounds(numbers, pairs)
        extra = "; ".join(part for part in (dropped, note) if part)
        runs = (len(good), len(good))
        if not good:
            base_all = [b for b, _ in pairs]
            head_all = [h for _, h in pairs]
            if not _usable(base_all):
                reason = _missing("base", base_all)
            elif not _usable(head_all):
                reason = _missing("head", head_all)
            else:
                reason = "no round has both a base and a head time"
            results[config] = _untestable(
                config,
                _usable(base_all),
                _usable(head_all),
                runs,
                FAILED,
                "; ".join(part for part in (reason, note) if part),
                paired_runs=True,
            )
            continue
        if len(good) < 2:
            results[config] = _untestable(
                config,
                base,
                head,
                runs,
                INCONCLUSIVE,
                "; ".join(
                    part for part in (f"{len(good)} usable round; needs at least 2", extra) if part
                ),
                paired_runs=True,
            )
            continue
        test = paired([math.log(h) - math.log(b) for b, h in good])
        tested[config] = _Tested(_geometric_mean(base), _geometric_mean(head), runs, test, extra)
    return _judge(list(rounds), results, tested, factor=factor, alpha=alpha, paired_runs=True)


def withhold(comparisons: Sequence[Comparison], reason: str) -> list[Comparison]:
    """The comparisons as ``inconclusive`` with ``reason`` first: runs that must not be
    compared (two GPUs, a GPU that cannot be told). Ratios stay for the reader; a failed
    configuration stays failed."""
    out = []
    for c in comparisons:
        verdict = c.verdict if c.verdict == FAILED else INCONCLUSIVE
        out.append(
            Comparison(
                c.config,
                c.base,
                c.head,
                c.ratio,
                c.low,
                c.high,
                verdict,
                c.p_value,
                c.runs,
                f"{reason}; {c.reason}" if c.reason else reason,
                c.detectable,
                c.paired,
            )
        )
    return out
