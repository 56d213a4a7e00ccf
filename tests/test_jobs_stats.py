"""The t distribution, Welch's test and Benjamini-Hochberg against published values."""

import math

import pytest

from bot.jobs import stats


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [
        # Two-sided critical values from standard t tables.
        (2.776445, 4, 0.05),
        (12.706205, 1, 0.05),
        (2.228139, 10, 0.05),
        (1.959964, 1e9, 0.05),
        (4.604095, 4, 0.01),
        (0.0, 7, 1.0),
    ],
)
def test_two_sided_t_tail_matches_tables(t: float, df: float, p: float) -> None:
    assert stats.t_two_sided_p(t, df) == pytest.approx(p, abs=2e-6)
    assert stats.t_two_sided_p(-t, df) == pytest.approx(p, abs=2e-6)


@pytest.mark.parametrize(("df", "t"), [(4, 2.776445), (10, 2.228139), (30, 2.042272)])
def test_t_quantile_inverts_the_tail(df: float, t: float) -> None:
    assert stats.t_quantile(0.975, df) == pytest.approx(t, abs=1e-5)


def test_welch_follows_its_definition() -> None:
    a = [19.1, 20.3, 18.7, 21.0, 19.8]
    b = [21.2, 22.8, 20.1, 23.4, 21.9]
    result = stats.welch(a, b)
    mean_a, mean_b = sum(a) / 5, sum(b) / 5
    assert result.difference == pytest.approx(mean_b - mean_a)
    var_a = sum((x - mean_a) ** 2 for x in a) / 4
    var_b = sum((x - mean_b) ** 2 for x in b) / 4
    se = math.sqrt(var_a / 5 + var_b / 5)
    assert result.standard_error == pytest.approx(se)
    t = result.difference / se
    assert result.p_value == pytest.approx(stats.t_two_sided_p(t, result.df))
    # t = 2.944 on 7.2 degrees of freedom: between the tables' 0.05 (2.365) and 0.02 (2.998).
    assert result.df == pytest.approx(7.1966, abs=1e-4)
    assert 0.02 < result.p_value < 0.05


def test_welch_without_spread_is_certain_either_way() -> None:
    assert stats.welch([1.0, 1.0], [1.0, 1.0]).p_value == 1.0
    assert stats.welch([1.0, 1.0], [2.0, 2.0]).p_value == 0.0
    with pytest.raises(ValueError):
        stats.welch([1.0], [1.0, 2.0])


def test_benjamini_hochberg_steps_up() -> None:
    # The classic example: m = 5, alpha = 0.05; thresholds 0.01, 0.02, ..., 0.05.
    p = [0.001, 0.008, 0.039, 0.041, 0.042]
    assert stats.benjamini_hochberg(p, 0.05) == [True, True, True, True, True]
    assert stats.benjamini_hochberg([0.02, 0.04, 0.9], 0.05) == [False, False, False]
    assert stats.benjamini_hochberg([0.02, 0.03, 0.9], 0.05) == [True, True, False]
    assert stats.benjamini_hochberg([0.001, 0.04, 0.9], 0.05) == [True, False, False]
    assert stats.benjamini_hochberg([], 0.05) == []
