"""Small, dependency-free statistics for benchmark verdicts: Student's t, Welch's and paired tests.

Kernel benchmarks give a handful of runs per side, so the tests must be exact for small
samples; scipy would be a 40 MB dependency for three functions. The incomplete beta function
is evaluated by its continued fraction (Lentz's method), as in Numerical Recipes §6.4, which
converges in a few dozen terms for every argument used here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

_EPS = 3e-14
_TINY = 1e-300
_MAX_TERMS = 300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isnan(t):
        return 1.0
    if math.isinf(t):
        return 0.0
    return regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(probability: float, df: float) -> float:
    """The t with P(T <= t) = ``probability`` (for 0.5 <= probability < 1), by bisection."""
    if not 0.5 <= probability < 1.0:
        raise ValueError("probability must be in [0.5, 1)")
    target = 2.0 * (1.0 - probability)  # the two-sided tail at that t
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > target:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_two_sided_p(middle, df) > target:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


@dataclass(frozen=True)
class WelchResult:
    difference: float  # mean(b) - mean(a)
    standard_error: float
    df: float
    p_value: float  # two-sided


def welch(a: Sequence[float], b: Sequence[float]) -> WelchResult:
    """Welch's unequal-variance t-test of mean(b) against mean(a); each side needs 2 values."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's test needs at least two values per side")
    n_a, n_b = len(a), len(b)
    mean_a, mean_b = sum(a) / n_a, sum(b) / n_b
    var_a = sum((x - mean_a) ** 2 for x in a) / (n_a - 1)
    var_b = sum((x - mean_b) ** 2 for x in b) / (n_b - 1)
    term_a, term_b = var_a / n_a, var_b / n_b
    difference = mean_b - mean_a
    se = math.sqrt(term_a + term_b)
    if se == 0.0:
        # Identical runs on both sides: no spread to test against.
        return WelchResult(difference, 0.0, float(n_a + n_b - 2), 1.0 if difference == 0 else 0.0)
    df = (term_a + term_b) ** 2 / (term_a**2 / (n_a - 1) + term_b**2 / (n_b - 1))
    return WelchResult(difference, se, df, t_two_sided_p(difference / se, df))


def paired(differences: Sequence[float]) -> WelchResult:
    """The paired t-test: is the mean of per-round differences (head - base) zero?

    Rounds run back to back on one GPU share its state (clocks, temperature, neighbours), so
    their difference cancels what the two sides have in common; Welch's test would count it
    as noise twice.
    """
    n = len(differences)
    if n < 2:
        raise ValueError("the paired test needs at least two pairs")
    mean = sum(differences) / n
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    se = math.sqrt(variance / n)
    if se == 0.0:
        return WelchResult(mean, 0.0, float(n - 1), 1.0 if mean == 0 else 0.0)
    return WelchResult(mean, se, float(n - 1), t_two_sided_p(mean / se, n - 1))


def benjamini_hochberg(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Which hypotheses are rejected at false-discovery rate ``alpha`` (BH step-up).

    Under the global null (an A/A run) this also holds the chance of *any* flag to ``alpha``.
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    m = len(p_values)
    cutoff = -1
    for rank, index in enumerate(order, start=1):
        if p_values[index] <= rank * alpha / m:
            cutoff = rank
    rejected = [False] * m
    for rank, index in enumerate(order, start=1):
        if rank <= cutoff:
            rejected[index] = True
    return rejected
