"""Quality of the duplicate audit on a labelled set, beside a plain TF-IDF baseline.

    uv run python benchmarks/duplicates_eval.py     # the labelled set in duplicates_eval/
    uv run python benchmarks/duplicates_eval.py --cases benchmarks/duplicates_eval/review_cases.yaml
    uv run python benchmarks/duplicates_eval.py --prs X.jsonl --labels X.json   # another set

Metrics, over the PRs that have at least one labelled duplicate: recall@k is the share whose
top k candidates include a true duplicate. The false-alert rate is the share of PRs with no
labelled duplicate that still get a ``likely_duplicate``. The baseline is TF-IDF cosine on
title + body with scikit-learn's default settings (token pattern, smoothed idf, l2 norm),
written out here so it needs nothing installed; it ranks every other PR.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "duplicates_eval"))

from bot.duplicates.export import index_from_records, load_export  # noqa: E402
from bot.duplicates.records import record_from_dict  # noqa: E402
from bot.duplicates.scoring import LIKELY_DUPLICATE, SWEEP_MIN_SCORE, ScoringConfig  # noqa: E402

KS = (1, 5, 10)
# Baseline alert threshold, for its false-alert figure only (its ranking needs none).
BASELINE_ALERT_COSINE = 0.5


@dataclass
class Scores:
    recall: dict[int, float]
    false_alerts: float
    queries: int
    negatives: int
    # Share of PRs with a duplicate whose true duplicate is flagged likely_duplicate.
    alert_recall: float = 0.0
    # score bucket -> [candidates listed, of which true duplicates]
    calibration: dict[str, list[int]] | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "recall": {f"@{k}": round(v, 3) for k, v in self.recall.items()},
            "false_alert_rate": round(self.false_alerts, 3),
            "queries_with_duplicates": self.queries,
            "prs_without_duplicates": self.negatives,
            "alert_recall": round(self.alert_recall, 3),
            "calibration": self.calibration or {},
        }


def _metrics(
    rankings: dict[int, list[int]], alerts: dict[int, bool], truth: dict[int, set[int]]
) -> Scores:
    positives = [n for n, dups in truth.items() if dups]
    negatives = [n for n, dups in truth.items() if not dups]
    recall = {}
    for k in KS:
        hits = sum(1 for n in positives if set(rankings.get(n, [])[:k]) & truth[n])
        recall[k] = hits / len(positives) if positives else 0.0
    false = sum(1 for n in negatives if alerts.get(n))
    return Scores(
        recall, false / len(negatives) if negatives else 0.0, len(positives), len(negatives)
    )


def evaluate_prbot(records: list, truth: dict[int, set[int]], config: ScoringConfig) -> Scores:
    index = index_from_records(records, open_only=False)
    rankings, alerts, flagged = {}, {}, 0
    buckets: dict[str, list[int]] = {}
    for number in truth:
        features = index.get(number)
        if features is None:
            continue
        result = index.query(features, config, top=max(KS))
        rankings[number] = [c.number for c in result.candidates]
        alerts[number] = any(c.tier == LIKELY_DUPLICATE for c in result.candidates)
        flagged += any(
            c.tier == LIKELY_DUPLICATE and c.number in truth[number] for c in result.candidates
        )
        for c in result.candidates:
            low = min(int(c.score * 5), 4) / 5
            bucket = buckets.setdefault(f"{low:.1f}-{low + 0.2:.1f}", [0, 0])
            bucket[0] += 1
            bucket[1] += c.number in truth[number]
    scores = _metrics(rankings, alerts, truth)
    scores.alert_recall = flagged / scores.queries if scores.queries else 0.0
    scores.calibration = dict(sorted(buckets.items()))
    return scores


_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def evaluate_baseline(records: list, truth: dict[int, set[int]]) -> Scores:
    """Plain TF-IDF cosine on title + body, every pair."""
    docs = {r.number: Counter(_TOKEN.findall(f"{r.title}\n{r.body}".lower())) for r in records}
    n = len(docs)
    df: Counter[str] = Counter()
    for terms in docs.values():
        df.update(terms.keys())
    idf = {t: math.log((1 + n) / (1 + d)) + 1 for t, d in df.items()}
    vectors = {}
    for number, terms in docs.items():
        vec = {t: c * idf[t] for t, c in terms.items()}
        norm = math.sqrt(sum(w * w for w in vec.values())) or 1.0
        vectors[number] = {t: w / norm for t, w in vec.items()}
    rankings, alerts = {}, {}
    for number in truth:
        mine = vectors.get(number)
        if mine is None:
            continue
        sims = []
        for other, theirs in vectors.items():
            if other == number:
                continue
            sims.append((sum(w * theirs.get(t, 0.0) for t, w in mine.items()), other))
        sims.sort(key=lambda s: (-s[0], -s[1]))
        rankings[number] = [o for _, o in sims[: max(KS)]]
        alerts[number] = bool(sims) and sims[0][0] >= BASELINE_ALERT_COSINE
    return _metrics(rankings, alerts, truth)


REVIEW_CASES = ROOT / "benchmarks" / "duplicates_eval" / "review_cases.yaml"


def load_labelled(
    prs: Path | None, labels: Path | None, cases: Path | None = None
) -> tuple[list, dict[int, set[int]]]:
    """A cases file (default: the labelled set), or an export plus
    ``{"groups": [[n, n, ...], ...]}``."""
    if prs is None:
        from build import load_cases

        raw, truth = load_cases(cases) if cases else load_cases()
        return [record_from_dict(r) for r in raw], truth
    records = load_export(prs)
    groups = json.loads(labels.read_text())["groups"] if labels else []
    truth = {r.number: set() for r in records}
    for group in groups:
        for number in group:
            if number in truth:
                truth[number] = set(group) - {number}
    return records, truth


def text_only(records: list) -> list:
    """The same PRs reduced to number, title and body (what some exports carry)."""
    return [
        record_from_dict({"number": r.number, "title": r.title, "body": r.body}) for r in records
    ]


def run(
    prs: Path | None = None, labels: Path | None = None, cases: Path | None = None
) -> dict[str, object]:
    """Both systems on the full records, and again on text-only copies of them."""
    records, truth = load_labelled(prs, labels, cases)
    out: dict[str, object] = {"records": len(records)}
    for name, variant in (("full", records), ("text_only", text_only(records))):
        prbot = evaluate_prbot(variant, truth, ScoringConfig(min_score=SWEEP_MIN_SCORE))
        baseline = evaluate_baseline(variant, truth)
        ratio = prbot.recall[1] / baseline.recall[1] if baseline.recall[1] else float("inf")
        out[name] = {
            "prbot": prbot.to_json(),
            "baseline_tfidf": baseline.to_json(),
            "recall_at_1_ratio": round(ratio, 2),
        }
    return out


def markdown(result: dict[str, object]) -> str:
    full = result["full"]
    p = full["prbot"]
    lines = [
        f"{result['records']} records, {p['queries_with_duplicates']} with a labelled duplicate, "
        f'{p["prs_without_duplicates"]} without. "Text only" is the same set with every '
        "record cut to number, title and body.",
        "",
        "| records | system | recall@1 | recall@5 | recall@10 | false alerts |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for variant, label in (("full", "full"), ("text_only", "text only")):
        for key, name in (("prbot", "prbot"), ("baseline_tfidf", "TF-IDF cosine (title + body)")):
            s = result[variant][key]
            r = s["recall"]
            lines.append(
                f"| {label} | {name} | {r['@1']:.3f} | {r['@5']:.3f} | {r['@10']:.3f} | "
                f"{s['false_alert_rate']:.1%} |"
            )
    lines += [
        "",
        f"Likely duplicates flagged: {p['alert_recall']:.0%} of the PRs that have one (full "
        f"records), {result['text_only']['prbot']['alert_recall']:.0%} text only.",
        "",
        "Calibration (full records, every listed candidate): share of true duplicates by score.",
        "",
        "| score | candidates | true duplicates |",
        "| --- | ---: | ---: |",
    ]
    for bucket, (listed, true) in p["calibration"].items():
        lines.append(f"| {bucket} | {listed} | {true / listed:.0%} |")
    lines += [
        "",
        f"recall@1 ratio prbot / baseline: **{full['recall_at_1_ratio']}×** on full records, "
        f"**{result['text_only']['recall_at_1_ratio']}×** text only (target ≥ 1.15×). "
        f"Baseline false alerts counted at cosine ≥ {BASELINE_ALERT_COSINE}; prbot's are PRs "
        "without a duplicate that get a `likely_duplicate`.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=Path)
    parser.add_argument("--labels", type=Path)
    parser.add_argument(
        "--cases", type=Path, help=f"a labelled cases file, e.g. {REVIEW_CASES.relative_to(ROOT)}"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = parser.parse_args()
    result = run(args.prs, args.labels, args.cases)
    print(json.dumps(result, indent=2) if args.json else markdown(result))


if __name__ == "__main__":
    main()
