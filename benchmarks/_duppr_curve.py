"""Alert curves for benchmarks/duplicates_real.py: what each likely-duplicate threshold flags,
and the threshold chosen leave-one-repository-out."""

from __future__ import annotations

from dataclasses import dataclass, field

from _duppr_systems import Outcome

# Alert targets (issue #25): flag at least this share of the true duplicates, the top flag
# right this often, false alerts on at most this share of the PRs without one.
TARGET_FLAGGED, TARGET_PRECISION, TARGET_FALSE = 0.30, 0.93, 0.01


@dataclass
class Curve:
    """Alerts at each threshold: (flagged, right, false alerts) summed over repositories."""

    points: dict[float, list[int]] = field(default_factory=dict)
    positives: int = 0
    negatives: int = 0

    @classmethod
    def of(cls, outcome: Outcome, truth: dict[int, set[int]], thresholds) -> Curve:
        curve = cls(positives=sum(1 for d in truth.values() if d))
        curve.negatives = len(truth) - curve.positives
        for threshold in thresholds:
            flagged = right = false = 0
            for number, scored in outcome.scored.items():
                hit = next((c for score, ok, c in scored if ok and score >= threshold), None)
                if hit is None:
                    continue
                flagged += 1
                right += hit in truth[number]
                false += not truth[number]
            curve.points[threshold] = [flagged, right, false]
        return curve

    def __add__(self, other: Curve) -> Curve:
        points = {
            t: [a + b for a, b in zip(p, other.points[t], strict=True)]
            for t, p in self.points.items()
        }
        return Curve(points, self.positives + other.positives, self.negatives + other.negatives)

    def row(self, threshold: float) -> dict[str, float]:
        flagged, right, false = self.points[threshold]
        return {
            "threshold": threshold,
            "flagged": flagged,
            "right": right,
            "flagged_share": round(right / self.positives, 3) if self.positives else 0.0,
            "precision": round(right / flagged, 3) if flagged else 1.0,
            "false_alert_rate": round(false / self.negatives, 4) if self.negatives else 0.0,
        }

    def meets(self, threshold: float) -> bool:
        r = self.row(threshold)
        return r["precision"] >= TARGET_PRECISION and r["false_alert_rate"] <= TARGET_FALSE

    def best(self) -> float | None:
        """The lowest threshold meeting the precision and false-alert targets (most flags)."""
        return next((t for t in sorted(self.points) if self.points[t][0] and self.meets(t)), None)


def leave_one_repo_out(curves: dict[str, Curve]) -> dict[str, object]:
    """Each repository's alerts at the threshold chosen on the other twelve."""
    total: list[int] = [0, 0, 0]
    chosen: dict[str, float | None] = {}
    for name, curve in curves.items():
        rest = None
        for other, c in curves.items():
            if other != name:
                rest = c if rest is None else rest + c
        threshold = rest.best() if rest is not None else None
        chosen[name] = threshold
        if threshold is not None:
            total = [a + b for a, b in zip(total, curve.points[threshold], strict=True)]
    positives = sum(c.positives for c in curves.values())
    negatives = sum(c.negatives for c in curves.values())
    flagged, right, false = total
    return {
        "thresholds": chosen,
        "flagged": flagged,
        "right": right,
        "flagged_share": round(right / positives, 3) if positives else 0.0,
        "precision": round(right / flagged, 3) if flagged else 1.0,
        "false_alert_rate": round(false / negatives, 4) if negatives else 0.0,
    }
