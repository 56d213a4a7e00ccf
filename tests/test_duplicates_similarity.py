"""Prepared TF-IDF cosine: equal to the textbook formula, cached norms, empty sides."""

from __future__ import annotations

import math

from bot.duplicates.features import build_features
from bot.duplicates.index import MemoryIndex
from bot.duplicates.similarity import QueryVector, tfidf_vector


def _plain_cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(w * b.get(t, 0.0) for t, w in a.items())
    norm = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norm if norm else 0.0


def test_prepared_cosine_matches_the_formula() -> None:
    docs = [
        build_features(1, title="Fix FP8 KV cache scales for Gemma 3", body="k_scale not loaded"),
        build_features(2, title="Gemma3 FP8 kv cache scale loading", body="scales were skipped"),
        build_features(3, title="Add Olmo3 model", body="sliding window"),
    ]
    index = MemoryIndex(docs)
    query = QueryVector(docs[0].terms, index, "terms")
    for other in docs[1:]:
        expected = _plain_cosine(
            tfidf_vector(docs[0].terms, index), tfidf_vector(other.terms, index)
        )
        assert math.isclose(query.cosine(other, index), expected, rel_tol=1e-9)
    assert query.cosine(docs[1], index) > query.cosine(docs[2], index)
    assert "terms" in docs[1].norms  # cached for the next query


def test_empty_sides_score_zero() -> None:
    empty = build_features(1)
    other = build_features(2, title="anything at all")
    index = MemoryIndex([empty, other])
    assert QueryVector(empty.terms, index, "terms").cosine(other, index) == 0.0
    assert QueryVector(other.terms, index, "terms").cosine(empty, index) == 0.0
