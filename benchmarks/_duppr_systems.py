"""The systems benchmarks/duplicates_real.py compares on DupPR, each replayed in number order:
prbot (with and without sentence embeddings), vLLM's own duplicate checker, and TF-IDF.

vLLM's checker is ``.github/workflows/scripts/detect_duplicate_prs.py`` of vllm-project/vllm,
as it ranks: the text ``Title: <title>\\nBody: <first 800 characters of the body>`` embedded
with all-MiniLM-L6-v2 (here through prbot[embeddings]' encoder), cosine against the 500 most
recently updated PRs (here: the 500 highest-numbered earlier ones; the corpus has no dates),
the top 20 re-scored as 0.75 x cosine + 0.25 x Jaccard of the changed files (the corpus has no
files: 0), and a hint posted for matches at 0.75 or more.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import random
import re
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bot.duplicates.embeddings import ENV_SWITCH, Embedder, embedding_text, find_model_files, pack
from bot.duplicates.features import PRFeatures, build_features
from bot.duplicates.index import MemoryIndex
from bot.duplicates.scoring import LIKELY_DUPLICATE, ScoringConfig, alert_chance, may_alert
from bot.duplicates.template import body_lines
from bot.duplicates.text import clean_body

TOP = 20
CACHE_CHUNK = 256
# vLLM's constants (detect_duplicate_prs.py).
VLLM_MAX_CANDIDATES = 500
VLLM_FILE_COMPARE_TOP_N = 20
VLLM_TEXT_WEIGHT, VLLM_FILE_WEIGHT = 0.75, 0.25
VLLM_THRESHOLD = 0.75
VLLM_BODY_CHARS = 800
# Baseline alert threshold, for TF-IDF's false-alert figure only.
TFIDF_ALERT_COSINE = 0.5


@dataclass
class Outcome:
    """One system's answers for one repository."""

    rankings: dict[int, list[int]] = field(default_factory=dict)
    # query -> the candidate it calls a likely duplicate first (None: no alert)
    alerts: dict[int, int | None] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    # query -> [(alert score, may alert, candidate)] best first: what an alert threshold sees
    scored: dict[int, list[tuple[float, bool, int]]] = field(default_factory=dict)
    # prbot: query -> its two best candidates by score, (score, signals, number)
    leaders: dict[int, list[tuple[float, dict, int]]] = field(default_factory=dict)


# -- embeddings -------------------------------------------------------------------------------
def vllm_text(pr: dict) -> str:
    return f"Title: {pr.get('title', '')}\nBody: {(pr.get('body') or '')[:VLLM_BODY_CHARS]}"


def prbot_text(pr: dict) -> str:
    """What prbot embeds: ``template_free_texts``' text when the PR has one."""
    return pr.get("embedding_text") or embedding_text(pr["title"], pr["body"])


class _LineCounts:
    """bot.duplicates.template's line counts over the PRs added so far."""

    def __init__(self) -> None:
        self.size = 0
        self.counts: Counter[str] = Counter()

    def line_df(self, key: str) -> int:
        return self.counts[key]

    def add(self, pr: dict) -> None:
        self.size += 1
        self.counts.update(body_lines(clean_body(pr["body"] or "")).keys())


def template_free_texts(prs: dict[int, dict]) -> None:
    """Each PR's embedding text without the template lines its repository's earlier PRs
    share (what the index knows when the PR is written), kept as ``embedding_text``."""
    lines = _LineCounts()
    for number in sorted(prs):
        pr = prs[number]
        pr["embedding_text"] = embedding_text(pr["title"], pr["body"], lines)
        lines.add(pr)


class EmbeddingCache:
    """Full-precision vectors by text digest, kept in the data directory between runs (the
    encoder takes minutes for a corpus; the figures do not change)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vectors: dict[str, tuple[float, ...]] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                key, packed = line.split(" ", 1)
                raw = base64.b64decode(packed)
                self.vectors[key] = struct.unpack(f"<{len(raw) // 4}f", raw)
        self.model: Embedder | None = None
        self.encode_seconds = 0.0
        self.encoded = 0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def ensure(self, texts: list[str]) -> None:
        """Encode the texts not cached yet (empty texts have no vector)."""
        missing = sorted({t for t in texts if t.strip() and self.key(t) not in self.vectors})
        if not missing:
            return
        if self.model is None:
            files = find_model_files()
            if files is None:
                raise SystemExit("vectors missing and prbot[embeddings] is not installed")
            self.model = Embedder(files)
        for at in range(
            0, len(missing), CACHE_CHUNK
        ):  # kept as it goes: an interrupted run resumes
            chunk = missing[at : at + CACHE_CHUNK]
            start = time.process_time()
            rows = self.model.encoder.encode(chunk)
            self.encode_seconds += time.process_time() - start
            self.encoded += len(chunk)
            with self.path.open("a") as out:
                for text, row in zip(chunk, rows, strict=True):
                    values = tuple(float(v) for v in row)
                    self.vectors[self.key(text)] = values
                    raw = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
                    out.write(f"{self.key(text)} {raw}\n")

    def get(self, text: str) -> tuple[float, ...]:
        return self.vectors.get(self.key(text), ()) if text.strip() else ()


def embeddings_available() -> bool:
    """prbot[embeddings] installed and not switched off (PRBOT_EMBEDDINGS=0)."""
    switch = os.environ.get(ENV_SWITCH, "1").strip().lower()
    return switch not in ("0", "false", "no", "off") and find_model_files() is not None


# -- prbot ------------------------------------------------------------------------------------
def prbot_features(number: int, pr: dict, cache: EmbeddingCache | None) -> PRFeatures:
    # A synthetic PR of the large pool borrows the vector of the PR its title came from.
    source = pr.get("vector_from", pr)
    vector = cache.get(prbot_text(source)) if cache is not None else ()
    return build_features(
        number, title=pr["title"], body=pr["body"], embedding=pack(vector) if vector else ""
    )


def run_prbot(prs: dict[int, dict], config: ScoringConfig, cache: EmbeddingCache | None) -> Outcome:
    """Replay in number order: query against the earlier PRs, then index the PR."""
    outcome = Outcome()
    index = MemoryIndex()
    for number in sorted(prs):
        features = prbot_features(number, prs[number], cache)
        start = time.process_time()
        result = index.query(features, config, top=TOP)
        outcome.seconds.append(time.process_time() - start)
        outcome.rankings[number] = [c.number for c in result.candidates]
        flagged = [c.number for c in result.candidates if c.tier == LIKELY_DUPLICATE]
        outcome.alerts[number] = flagged[0] if flagged else None
        # The best candidate by the model's score before the overlap cap, and the runner-up:
        # what the alert model judges (scoring.alert_chance). Only the best can be flagged at
        # any threshold of text_only_alert_chance, and only when it may alert at all.
        best = sorted(
            ((c.raw_score, c.signals, c.number) for c in result.candidates),
            key=lambda s: (-s[0], -s[2]),
        )
        outcome.leaders[number] = best[:2]
        if best:
            raw, signals, n = best[0]
            rival, rival_signals = (best[1][0], best[1][1]) if len(best) > 1 else (0.0, {})
            chance = alert_chance(signals, raw, rival, rival_signals.get("closeness", 0.0))
            outcome.scored[number] = [(chance, may_alert(signals), n)]
        else:
            outcome.scored[number] = []
        index.add(features)
    return outcome


# -- vLLM's checker ---------------------------------------------------------------------------
def _dot(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    if not a or not b:
        return 0.0
    # Vectors are unit length, as sentence-transformers' normalised output is; vLLM divides by
    # the norms (plus 1e-10), which changes nothing past rounding.
    return sum(x * y for x, y in zip(a, b, strict=True))


def run_vllm(prs: dict[int, dict], cache: EmbeddingCache) -> Outcome:
    outcome = Outcome()
    earlier: list[int] = []
    vectors = {n: cache.get(vllm_text(pr)) for n, pr in prs.items()}
    for number in sorted(prs):
        mine = vectors[number]
        start = time.process_time()
        history = list(reversed(earlier))[:VLLM_MAX_CANDIDATES]  # most recent first
        text = [(_dot(mine, vectors[o]), o) for o in history]
        text.sort(key=lambda s: -s[0])  # stable: ties keep the more recent first
        files_sim = 0.0  # jaccard_similarity of two empty file lists
        final = [
            (VLLM_TEXT_WEIGHT * sim + VLLM_FILE_WEIGHT * files_sim, o)
            for sim, o in text[:VLLM_FILE_COMPARE_TOP_N]
        ]
        final.sort(key=lambda s: -s[0])
        outcome.seconds.append(time.process_time() - start)
        outcome.rankings[number] = [o for _, o in final[:TOP]]
        hits = [o for sim, o in final[:5] if sim >= VLLM_THRESHOLD]
        outcome.alerts[number] = hits[0] if hits else None
        outcome.scored[number] = [(sim, True, o) for sim, o in final]
        earlier.append(number)
    return outcome


# -- TF-IDF -----------------------------------------------------------------------------------
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def tfidf_vectors(prs: dict[int, dict]) -> dict[int, dict[str, float]]:
    """scikit-learn's default TfidfVectorizer (token pattern, lower case, smoothed idf, l2)
    on title + body, idf over the whole pool."""
    docs = {
        n: Counter(_TOKEN.findall(f"{pr['title']}\n{pr['body']}".lower())) for n, pr in prs.items()
    }
    size = len(docs)
    df: Counter[str] = Counter()
    for terms in docs.values():
        df.update(terms.keys())
    idf = {t: math.log((1 + size) / (1 + d)) + 1 for t, d in df.items()}
    vectors: dict[int, dict[str, float]] = {}
    for number, terms in docs.items():
        vec = {t: c * idf[t] for t, c in terms.items()}
        norm = math.sqrt(sum(w * w for w in vec.values())) or 1.0
        vectors[number] = {t: w / norm for t, w in vec.items()}
    return vectors


def run_tfidf(prs: dict[int, dict]) -> Outcome:
    vectors = tfidf_vectors(prs)
    outcome = Outcome()
    earlier: list[int] = []
    for number in sorted(prs):
        mine = vectors[number]
        start = time.process_time()
        sims = sorted(
            ((sum(w * vectors[o].get(t, 0.0) for t, w in mine.items()), o) for o in earlier),
            key=lambda s: (-s[0], -s[1]),
        )
        outcome.seconds.append(time.process_time() - start)
        outcome.rankings[number] = [o for _, o in sims[:TOP]]
        top = sims[0] if sims else None
        outcome.alerts[number] = top[1] if top and top[0] >= TFIDF_ALERT_COSINE else None
        outcome.scored[number] = [(s, True, o) for s, o in sims[:TOP]]
        earlier.append(number)
    return outcome


# -- time per query at a given number of open PRs ---------------------------------------------
def mixed_pool(prs: list[dict], size: int, seed: int = 25) -> list[dict]:
    """``size`` open PRs from the corpus's texts: each the title of one real PR with the body
    of another, drawn at random (the corpus has 2,327 texts; exact copies would make every
    query's top twenty copies of itself)."""
    rng = random.Random(seed)
    out = []
    for _ in range(size):
        a, b = rng.choice(prs), rng.choice(prs)
        out.append({"title": a["title"], "body": b["body"], "vector_from": a})
    return out


def query_times(
    pool: list[dict],
    queries: int,
    config: ScoringConfig,
    cache: EmbeddingCache | None,
    baselines: bool = True,
) -> dict[str, list[float]]:
    """CPU seconds per query against ``len(pool)`` open PRs, for each system: the last
    ``queries`` PRs of the pool are asked against all the others. ``scored_prbot``: the PRs
    prbot scored in full per query (the work that must stay bounded)."""
    numbered = {i + 1: pr for i, pr in enumerate(pool)}
    asked = sorted(numbered)[-queries:]
    out: dict[str, list[float]] = {}
    variants = [("prbot", None)] + ([("prbot_embeddings", cache)] if cache is not None else [])
    for name, vectors in variants:
        features = {n: prbot_features(n, pr, vectors) for n, pr in numbered.items()}
        index = MemoryIndex(features.values())
        times = out.setdefault(name, [])
        for n in asked:
            start = time.process_time()
            result = index.query(features[n], config, top=TOP)
            times.append(time.process_time() - start)
            if vectors is None:
                out.setdefault("scored_prbot", []).append(float(result.scored))
    if baselines:
        tfidf = tfidf_vectors(numbered)
        times = out.setdefault("tfidf", [])
        for n in asked:
            mine = tfidf[n]
            start = time.process_time()
            sorted(
                (sum(w * tfidf[o].get(t, 0.0) for t, w in mine.items()), o)
                for o in numbered
                if o != n
            )[-TOP:]
            times.append(time.process_time() - start)
    if cache is not None:
        import numpy as np  # the extra's: vLLM's script takes its cosines with numpy too

        order = sorted(numbered, reverse=True)
        position = {o: i for i, o in enumerate(order)}
        matrix = np.array(
            [
                cache.get(vllm_text(numbered[o].get("vector_from", numbered[o]))) or [0.0] * 384
                for o in order
            ]
        )
        times = out.setdefault("vllm", [])
        for n in asked:
            start = time.process_time()
            rows = [i for i, o in enumerate(order[: VLLM_MAX_CANDIDATES + 1]) if o != n]
            sims = matrix[rows[:VLLM_MAX_CANDIDATES]] @ matrix[position[n]]
            np.argsort(-sims, kind="stable")[:VLLM_FILE_COMPARE_TOP_N]
            times.append(time.process_time() - start)
    return out
