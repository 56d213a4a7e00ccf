"""Text similarity for the scorer: TF-IDF cosine over the index's document frequencies.

The queried PR's weights are prepared once per query; each candidate's vector norm is cached
on its features, so scoring a candidate costs one pass over the shared terms.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Protocol

from bot.duplicates.features import PRFeatures
from bot.duplicates.template import without_template


class CorpusStats(Protocol):
    """Document frequencies from the index, so rare shared things weigh more."""

    size: int

    def term_df(self, term: str) -> int: ...

    def code_term_df(self, term: str) -> int: ...

    def path_df(self, path: str) -> int: ...

    def identifier_df(self, name: str) -> int: ...

    def reference_df(self, number: int) -> int: ...

    def line_df(self, key: str) -> int: ...


# A word in more than this share of the open PRs is the project's boilerplate (a PR template's
# "| Bug fix? | BC breaks? |" table, a review badge), not wording: it gets no weight. Applied
# once the index is big enough for shares to mean something.
MAX_DF_SHARE = 0.25
MIN_SIZE_FOR_MAX_DF = 20


def _idf(df: int, size: int) -> float:
    if size >= MIN_SIZE_FOR_MAX_DF and df > MAX_DF_SHARE * size:
        return 0.0
    return math.log((size + 1) / (df + 1)) + 1.0


def tfidf_vector(terms: dict[str, int], stats: CorpusStats, code: bool = False) -> dict[str, float]:
    """Sublinear tf times smoothed idf, per term."""
    size = stats.size
    df = stats.code_term_df if code else stats.term_df
    return {t: (1.0 + math.log(c)) * _idf(df(t), size) for t, c in terms.items()}


# A cached document norm is reused until the index size drifts this much: document
# frequencies move slowly, and recomputing every candidate's norm per query dominated latency.
NORM_DRIFT = 0.1


def _fresh(cached_size: int, size: int) -> bool:
    return abs(cached_size - size) <= NORM_DRIFT * max(cached_size, 1)


def compared_terms(features: PRFeatures, kind: str, stats: CorpusStats) -> Counter[str]:
    """The terms a cosine compares: the text's without the repository's template lines."""
    if kind != "terms" or not features.lines:
        return getattr(features, kind)
    cached = features.own_terms
    if cached is not None and _fresh(cached[0], stats.size):
        return cached[1]
    terms = without_template(features.terms, features.lines, stats)
    features.own_terms = (stats.size, terms)
    return terms


def _norm(features: PRFeatures, kind: str, stats: CorpusStats) -> float:
    cached = features.norms.get(kind)
    size = stats.size
    if cached is not None and _fresh(cached[0], size):
        return cached[1]
    terms = compared_terms(features, kind, stats)
    vector = tfidf_vector(terms, stats, code=kind == "code_terms")
    norm = math.sqrt(sum(w * w for w in vector.values()))
    features.norms[kind] = (size, norm)
    return norm


class QueryVector:
    """One side of a cosine, prepared once: weights and idf of the query's terms."""

    def __init__(self, terms: dict[str, int], stats: CorpusStats, kind: str) -> None:
        df = stats.code_term_df if kind == "code_terms" else stats.term_df
        self.kind = kind
        self.idf = {t: _idf(df(t), stats.size) for t in terms}
        self.weights = {t: (1.0 + math.log(c)) * self.idf[t] for t, c in terms.items()}
        self.norm = math.sqrt(sum(w * w for w in self.weights.values()))
        self.shared_idf = 0.0

    def cosine(self, other: PRFeatures, stats: CorpusStats) -> float:
        """The cosine with ``other``; ``shared_idf`` is then the idf summed over the shared
        terms (how much the two have in common, whatever their lengths)."""
        self.shared_idf = 0.0
        theirs = compared_terms(other, self.kind, stats)
        if not self.norm or not theirs:
            return 0.0
        mine = self.weights
        if len(mine) <= len(theirs):
            shared = [t for t in mine if t in theirs]
        else:
            shared = [t for t in theirs if t in mine]
        if not shared:
            return 0.0
        idf = self.idf
        self.shared_idf = sum(idf[t] for t in shared)
        dot = sum(mine[t] * (1.0 + math.log(theirs[t])) * idf[t] for t in shared)
        other_norm = _norm(other, self.kind, stats)
        return dot / (self.norm * other_norm) if other_norm else 0.0
