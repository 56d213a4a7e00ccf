"""Leave-one-repository-out choice of prbot's text-only weights, for duplicates_real.py tune.

prbot replays each repository once (every earlier PR a candidate, ``--min-score 0``) and the
signals of every query/candidate pair are kept. A weight vector ranks each query's candidates
by the model's logit; the search is coordinate-wise over a small grid per weight. For each of
the 13 repositories the weights are chosen on the other twelve and the repository is ranked
with them: that recall is the estimate of what the choice does on repositories it never saw.
The text weights in bot/duplicates/scoring.py are the search's result on all 13; the
embedding's weight is not (see the last table: held out, the search's choice gains nothing).

The replay runs without the number clock: DupPR's pool holds only PRs of duplicate pairs, so
the nearest earlier number is far more often the duplicate than among a repository's real
open PRs (which carry dates, not numbers, in prbot). Chosen with the clock, the search puts
its weight on that artefact (text weight to the bottom of the grid); without it, the weights
are about the wording, which is what carries over.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from _duppr_systems import prbot_features

from bot.duplicates.index import MemoryIndex
from bot.duplicates.scoring import (
    SEMANTIC_CENTER,
    SEMANTIC_WEIGHT,
    WEIGHTS,
    ScoringConfig,
    text_only_weights,
)

# What the search may change, and the values it tries (the current value is always tried).
GRID: dict[str, tuple[float, ...]] = {
    "text": (1.0, 2.0, 3.0, 4.5, 6.0),
    "title": (0.0, 0.5, 1.0, 1.8, 3.0),
    "shared_mention": (0.5, 1.0, 2.0, 3.0, 4.0),
    "direct_link": (1.0, 2.4, 4.0),
    "claimed_issue": (2.0, 3.6, 5.0),
    "semantic": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0),
}
ROUNDS = 3
# Ties in the objective go to the deeper recalls.
OBJECTIVE = {1: 1.0, 5: 0.1, 20: 0.05}


@dataclass
class Pairs:
    """Every scored query/candidate pair of the queries with a true duplicate."""

    signals: np.ndarray  # pair x weight name (FEATURES order)
    query: np.ndarray  # pair -> query index
    true: np.ndarray  # pair -> candidate is a true duplicate
    number: np.ndarray  # pair -> candidate number (ties: the higher number first)
    repo: np.ndarray  # query -> repository index
    names: list[str]


def collect(repos: dict, cache, features: list[str]) -> Pairs:
    config = ScoringConfig(min_score=0.0, number_clock=False)
    rows, query, true, number, repo = [], [], [], [], []
    for ri, r in enumerate(repos.values()):
        truth = r.earlier_duplicates()
        index = MemoryIndex()
        for n in sorted(r.prs):
            f = prbot_features(n, r.prs[n], cache)
            if truth[n]:
                q = len(repo)
                for c in index.query(f, config, top=len(index) + 1).candidates:
                    rows.append([_term(c.signals, k) for k in features])
                    query.append(q)
                    true.append(c.number in truth[n])
                    number.append(c.number)
                repo.append(ri)
            index.add(f)
    return Pairs(
        np.array(rows, dtype=float).reshape(-1, len(features)),
        np.array(query),
        np.array(true, dtype=bool),
        np.array(number, dtype=float),
        np.array(repo),
        list(repos),
    )


def _term(signals: dict[str, float], name: str) -> float:
    """The signal as the logit adds it (the cosine of two embeddings about its center)."""
    if name == "semantic":
        return signals["semantic"] - SEMANTIC_CENTER if "semantic" in signals else 0.0
    return signals.get(name, 0.0)


def hits(pairs: Pairs, w: np.ndarray) -> dict[int, np.ndarray]:
    """query -> whether a true duplicate is in the top k, for each k of OBJECTIVE."""
    score = pairs.signals @ w + pairs.number * 1e-9
    order = np.lexsort((-score, pairs.query))
    q, t = pairs.query[order], pairs.true[order]
    starts = np.r_[0, np.flatnonzero(np.diff(q)) + 1]
    rank = np.arange(len(q)) - np.repeat(starts, np.diff(np.r_[starts, len(q)]))
    out = {}
    for k in OBJECTIVE:
        found = np.zeros(len(pairs.repo), dtype=bool)
        found[q[t & (rank < k)]] = True
        out[k] = found
    return out


def search(
    pairs: Pairs, start: np.ndarray, features: list[str], free: list[str], mask: np.ndarray
) -> np.ndarray:
    def objective(w: np.ndarray) -> float:
        h = hits(pairs, w)
        return sum(weight * h[k][mask].mean() for k, weight in OBJECTIVE.items())

    w, best = start.copy(), objective(start)
    for _ in range(ROUNDS):
        moved = False
        for name in free:
            i = features.index(name)
            for value in GRID[name]:
                trial = w.copy()
                trial[i] = value
                score = objective(trial)
                if score > best + 1e-12:
                    w, best, moved = trial, score, True
        if not moved:
            break
    return w


def tune(repos: dict, cache, start: dict[str, float], free: list[str]) -> dict[str, object]:
    """The weights in ``free`` chosen leave-one-repository-out from ``start`` (the others
    held), the held-out recall, and the choice on all repositories."""
    features = list(start)
    pairs = collect(repos, cache, features)
    w0 = np.array([start[k] for k in features])
    per_fold = {}
    held = {k: np.zeros(len(pairs.repo), dtype=bool) for k in OBJECTIVE}
    for ri, name in enumerate(pairs.names):
        w = search(pairs, w0, features, free, pairs.repo != ri)
        h = hits(pairs, w)
        for k in OBJECTIVE:
            held[k][pairs.repo == ri] = h[k][pairs.repo == ri]
        per_fold[name] = {k: float(w[features.index(k)]) for k in free}
    everywhere = search(pairs, w0, features, free, np.ones(len(pairs.repo), dtype=bool))
    before, after = hits(pairs, w0), hits(pairs, everywhere)
    return {
        "queries": int(len(pairs.repo)),
        "start": {k: start[k] for k in free},
        "start_recall": _recall(before),
        "leave_one_repo_out": _recall(held),
        "per_fold": per_fold,
        "chosen": {k: float(everywhere[features.index(k)]) for k in free},
        "chosen_recall": _recall(after),
    }


def _recall(h: dict[int, np.ndarray]) -> dict[str, float]:
    return {f"@{k}": round(float(v.mean()), 4) for k, v in h.items()}


def tune_all(repos: dict, cache) -> dict[str, object]:
    """Text weights without the extra, then the embedding's weight with the text weights as
    chosen (one set of text weights serves both installs)."""
    text_free = [k for k in GRID if k != "semantic"]
    # From the weights text-only pairs had before (the code pairs' weights, WEIGHTS).
    start = {**text_only_weights(False), **{k: WEIGHTS[k] for k in text_free}}
    out: dict[str, object] = {"text": tune(repos, None, start, text_free)}
    if cache is not None:
        chosen = out["text"]["chosen"]  # type: ignore[index]
        start = {**text_only_weights(True), **chosen, "semantic": SEMANTIC_WEIGHT}
        out["semantic"] = tune(repos, cache, start, ["semantic"])
    return out


def markdown(result: dict, command: str) -> str:
    lines = [
        "# Choosing prbot's text-only weights (DupPR, leave-one-repository-out)",
        "",
        f"Produced by `{command}`. {__doc__.split(chr(10) + chr(10), 1)[1].strip()}",
        "",
        "Objective: recall@1 + 0.1 × recall@5 + 0.05 × recall@20 over the training "
        "repositories' queries; grid: "
        + "; ".join(f"{k} {', '.join(f'{v:g}' for v in vs)}" for k, vs in GRID.items())
        + ".",
    ]
    for part, label in (("text", "Without the extra"), ("semantic", "With prbot[embeddings]")):
        r = result.get(part)
        if not r:
            continue
        lines += [
            "",
            f"## {label}",
            "",
            f"{r['queries']} queries with an earlier duplicate, no number clock.",
            "",
            "| weights | recall@1 | recall@5 | recall@20 |",
            "| --- | ---: | ---: | ---: |",
        ]
        for name, rec in (
            ("before: " + _ws(r["start"]), r["start_recall"]),
            ("each repository at the weights chosen on the other twelve", r["leave_one_repo_out"]),
            ("chosen on all 13: " + _ws(r["chosen"]), r["chosen_recall"]),
        ):
            lines.append(f"| {name} | {rec['@1']:.3f} | {rec['@5']:.3f} | {rec['@20']:.3f} |")
        lines += [
            "",
            "| held-out repository | weights chosen on the other twelve |",
            "| --- | --- |",
        ]
        lines += [f"| {n} | {_ws(w)} |" for n, w in r["per_fold"].items()]
    return "\n".join(lines) + "\n"


def _ws(weights: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in weights.items())
