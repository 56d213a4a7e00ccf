"""The text-only alert model for benchmarks/duplicates_real.py: its examples, its fit, and its
alerts held out by repository.

Each query with a top candidate the model may judge (scoring.may_alert) is one example: the
top candidate's alert features against the runner-up (scoring.alert_features), labelled 1
when it is a true duplicate of the query. The fit is a logistic regression by projected
gradient (numpy), every weight but the intercept held at zero or above: more lead, more shared
wording or the same issue never lowers the chance, so no quirk of the development data can
make stronger evidence read weaker.
"""

from __future__ import annotations

from dataclasses import dataclass

from _duppr_curve import TARGET_FALSE, TARGET_PRECISION

from bot.duplicates.scoring import ALERT_FEATURES, alert_features, may_alert

# No penalty: the signs held at zero or above are the regularisation, and about 2,000 examples
# fit 9 weights. Held out (docs/benchmarks/duplicates_real.md's setting, logit floor 0.01),
# L2 = 0.001 and 0.01 flagged 30.0% and 27.1% of the true duplicates at the default bar,
# against 30.5% with none.
L2 = 0.0
STEPS = 4_000
# The thresholds a fold may choose from, lowest first (most flags).
THRESHOLD_GRID = tuple(round(0.05 + 0.025 * i, 3) for i in range(37))  # 0.05 .. 0.95


@dataclass
class Examples:
    """One repository's judged top candidates: features, right (a true duplicate) and false
    (the query has no earlier duplicate), plus how many queries there are of each kind."""

    rows: list[list[float]]
    right: list[bool]
    false: list[bool]
    positives: int
    negatives: int


def examples(leaders: dict[int, list[tuple[float, dict, int]]], truth: dict[int, set[int]]):
    rows, right, false = [], [], []
    for number, top in leaders.items():
        if not top or not may_alert(top[0][1]):
            continue
        raw, signals, candidate = top[0]
        rival, rival_signals = (top[1][0], top[1][1]) if len(top) > 1 else (0.0, {})
        features = alert_features(signals, raw, rival, rival_signals.get("closeness", 0.0))
        rows.append([features[name] for name in ALERT_FEATURES])
        right.append(candidate in truth[number])
        false.append(not truth[number])
    positives = sum(1 for d in truth.values() if d)
    return Examples(rows, right, false, positives, len(truth) - positives)


def fit(sets: list[Examples]) -> dict[str, float]:
    """Weights by name (and "intercept") fitted on the examples of ``sets`` together."""
    import numpy as np

    rows = [r for s in sets for r in s.rows]
    labels = [y for s in sets for y in s.right]
    if not rows or all(labels) or not any(labels):
        # Nothing to tell apart: a flat model at the share that is right.
        share = sum(labels) / len(labels) if labels else 0.0
        share = min(max(share, 1e-3), 1 - 1e-3)
        return {
            "intercept": float(np.log(share / (1 - share))),
            **dict.fromkeys(ALERT_FEATURES, 0.0),
        }
    x = np.hstack([np.ones((len(rows), 1)), np.asarray(rows, dtype=float)])
    y = np.asarray(labels, dtype=float)
    n = len(y)
    # Step 1/L, L the gradient's Lipschitz bound: 0.25 * the largest eigenvalue of X'X/n + L2.
    lipschitz = 0.25 * float(np.linalg.eigvalsh(x.T @ x / n)[-1]) + L2
    w = np.zeros(x.shape[1])
    momentum, t = w.copy(), 1.0
    for _ in range(STEPS):  # FISTA: accelerated projected gradient
        p = 1.0 / (1.0 + np.exp(-(x @ momentum)))
        grad = x.T @ (p - y) / n + L2 * np.r_[0.0, momentum[1:]]
        nxt = momentum - grad / lipschitz
        nxt[1:] = np.maximum(nxt[1:], 0.0)
        t_next = (1 + (1 + 4 * t * t) ** 0.5) / 2
        momentum = nxt + (t - 1) / t_next * (nxt - w)
        w, t = nxt, t_next
    return {"intercept": round(float(w[0]), 4)} | {
        name: round(float(v), 4) for name, v in zip(ALERT_FEATURES, w[1:], strict=True)
    }


def chances(found: Examples, weights: dict[str, float]) -> list[float]:
    import math

    out = []
    for row in found.rows:
        z = weights["intercept"] + sum(
            weights[name] * v for name, v in zip(ALERT_FEATURES, row, strict=True)
        )
        out.append(1.0 / (1.0 + math.exp(-z)))
    return out


def counts(found: Examples, weights: dict[str, float], threshold: float) -> list[int]:
    """[flagged, right, false alerts] at ``threshold``."""
    flagged = right = false = 0
    for chance, ok, bad in zip(chances(found, weights), found.right, found.false, strict=True):
        if chance >= threshold:
            flagged += 1
            right += ok
            false += bad
    return [flagged, right, false]


def _summed(sets: list[Examples], weights: dict[str, float], threshold: float) -> list[int]:
    total = [0, 0, 0]
    for found in sets:
        total = [a + b for a, b in zip(total, counts(found, weights, threshold), strict=True)]
    return total


def meets(total: list[int], negatives: int) -> bool:
    flagged, right, false = total
    return (
        bool(flagged) and right / flagged >= TARGET_PRECISION and false <= TARGET_FALSE * negatives
    )


def choose(sets: list[Examples], weights: dict[str, float]) -> float | None:
    """The lowest threshold of the grid meeting the precision and false-alert targets."""
    negatives = sum(s.negatives for s in sets)
    return next((t for t in THRESHOLD_GRID if meets(_summed(sets, weights, t), negatives)), None)


def figures(total: list[int], positives: int, negatives: int) -> dict[str, float]:
    flagged, right, false = total
    return {
        "flagged": flagged,
        "right": right,
        "flagged_share": round(right / positives, 3) if positives else 0.0,
        "precision": round(right / flagged, 3) if flagged else 1.0,
        "false_alert_rate": round(false / negatives, 4) if negatives else 0.0,
    }


def held_out(
    judged: dict[str, Examples], fit_on: dict[str, list[Examples]], default: float
) -> dict[str, object]:
    """Each repository judged by the model fitted on the other repositories' examples
    (``fit_on[name]``: every system's examples of that repository the fit uses), at the
    default threshold ("fixed") and at the threshold the other repositories choose."""
    fixed, chosen_total, chosen = [0, 0, 0], [0, 0, 0], {}
    for name, found in judged.items():
        rest = [s for other, sets in fit_on.items() if other != name for s in sets]
        weights = fit(rest)
        fixed = [a + b for a, b in zip(fixed, counts(found, weights, default), strict=True)]
        others = [s for other, s in judged.items() if other != name]
        threshold = choose(others, weights)
        chosen[name] = threshold
        if threshold is not None:
            got = counts(found, weights, threshold)
            chosen_total = [a + b for a, b in zip(chosen_total, got, strict=True)]
    positives = sum(s.positives for s in judged.values())
    negatives = sum(s.negatives for s in judged.values())
    return {
        "fixed": figures(fixed, positives, negatives),
        "chosen": figures(chosen_total, positives, negatives),
        "thresholds": chosen,
    }


def evaluate(
    plain: dict[str, Examples], semantic: dict[str, Examples] | None, default: float
) -> dict[str, object]:
    """The fits on all repositories and the held-out alerts. The plain model (no embedding) is
    fitted on both installs' top candidates: its inputs do not include the embedding, and
    twice the examples steady it; the semantic one on its own install's."""
    both = {name: [found] + ([semantic[name]] if semantic else []) for name, found in plain.items()}
    out: dict[str, object] = {
        "default": default,
        "fitted": {"plain": fit([s for sets in both.values() for s in sets])},
        "held_out": {"prbot": held_out(plain, both, default)},
    }
    if semantic:
        own = {name: [found] for name, found in semantic.items()}
        out["fitted"]["semantic"] = fit(list(semantic.values()))  # type: ignore[index]
        out["held_out"]["prbot_embeddings"] = held_out(semantic, own, default)  # type: ignore[index]
    return out
