"""Candidate generation over open PRs: inverted indexes instead of all pairs.

Postings map each path, added identifier, claimed or mentioned issue and text term to the
open PRs that have it. A query collects the PRs sharing its rarer keys, keeps the most
promising few by a cheap pre-score, and only those are scored in full. Keys shared by a
large share of the open PRs (hot files, everyday words) are left out of generation: they
would pull in everything and decide nothing.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from bot.duplicates.features import PRFeatures, is_bot
from bot.duplicates.scoring import (
    LIKELY_DUPLICATE,
    OVERLAP,
    TEXT_ONLY_OVERLAP_CAP,
    Candidate,
    PreparedQuery,
    ScoringConfig,
    alert_chance,
    is_listed,
    is_text_only,
    overlap_cap,
    reference_rarity,
    same_goal,
    shares_issue,
)
from bot.duplicates.template import LineStats

# How many PRs get full scoring per query, and how many text terms drive generation.
SCORED_PER_QUERY = 150
# When the keys find fewer PRs than this, the PRs opened nearest in time fill the list: a
# short or templated text ("Fix x.py", a backport) shares no rare word with its duplicate,
# yet full scoring still ranks it by its common words and the time apart.
NEAREST_FILL = 60
TEXT_TERMS_PER_QUERY = 24
CODE_TERMS_PER_QUERY = 8
# A key in more than this share of open PRs does not generate candidates.
MAX_KEY_SHARE = 0.1
MIN_KEY_LIMIT = 50
# Dates and numbers on one scale for the nearest-in-time fill (a busy repository opens a few
# dozen PRs and issues a day); only the order matters.
NUMBER_PER_DAY = 30


# Closed and merged PRs kept for comparison (a new PR redoing what a merged one did): at most
# this many per repository, the most recently closed; listed only as likely duplicates closed
# within CLOSED_DAYS of the queried PR's opening, at most CLOSED_TOP of them.
CLOSED_KEEP = 200
CLOSED_DAYS = 90
CLOSED_TOP = 3


@dataclass
class QueryResult:
    """What the index says about one PR: ranked candidates plus PRs excluded on purpose."""

    candidates: list[Candidate] = field(default_factory=list)
    # Recently merged or closed PRs that did the same work (their own tier).
    closed: list[Candidate] = field(default_factory=list)
    stacked: list[int] = field(default_factory=list)  # same author: stacked, not duplicates
    shared_commits: list[int] = field(default_factory=list)
    searched: int = 0
    # PRs considered for this query (scored in full unless a bot's or sharing commits): at most
    # SCORED_PER_QUERY + NEAREST_FILL whatever the number of open PRs, or a small index whole.
    scored: int = 0


class OpenPRIndex(Protocol):
    """What the duplicates check needs from ``context.open_prs``."""

    def query(self, features: PRFeatures, config: ScoringConfig, top: int = 10) -> QueryResult: ...

    def template_lines(self) -> LineStats:
        """The open PRs' body-line counts, whose template lines the checked PR's embedded
        text leaves out (as every stored PR's does)."""
        ...

    def __len__(self) -> int: ...


class MemoryIndex:
    """All open PRs of one repository, in memory. Add, replace and remove are incremental."""

    def __init__(self, items: Iterable[PRFeatures] = (), closed: Iterable[PRFeatures] = ()) -> None:
        self.docs: dict[int, PRFeatures] = {}
        # The recently closed PRs, an index of their own (own word statistics, bounded).
        self.recently_closed: MemoryIndex | None = None
        self._terms: defaultdict[str, set[int]] = defaultdict(set)
        self._paths: defaultdict[str, set[int]] = defaultdict(set)
        self._identifiers: defaultdict[str, set[int]] = defaultdict(set)
        self._code_terms: defaultdict[str, set[int]] = defaultdict(set)
        # issue or PR number -> PRs that claim or mention it
        self._references: defaultdict[int, set[int]] = defaultdict(set)
        # ticket or bug number of an outside tracker -> PRs that name it
        self._external: defaultdict[int, set[int]] = defaultdict(set)
        # body line digest -> PRs whose body has the line (bot.duplicates.template)
        self._lines: defaultdict[str, set[int]] = defaultdict(set)
        for features in items:
            self.add(features)
        for features in closed:
            self.add_closed(features)

    # -- corpus statistics (scoring.CorpusStats) --------------------------------------------
    @property
    def size(self) -> int:
        return len(self.docs)

    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, number: int) -> bool:
        return number in self.docs

    def term_df(self, term: str) -> int:
        postings = self._terms.get(term)
        return len(postings) if postings else 0

    def code_term_df(self, term: str) -> int:
        postings = self._code_terms.get(term)
        return len(postings) if postings else 0

    def path_df(self, path: str) -> int:
        postings = self._paths.get(path)
        return len(postings) if postings else 0

    def identifier_df(self, name: str) -> int:
        postings = self._identifiers.get(name)
        return len(postings) if postings else 0

    def line_df(self, key: str) -> int:
        postings = self._lines.get(key)
        return len(postings) if postings else 0

    def template_lines(self) -> MemoryIndex:
        return self  # its own line counts

    def reference_df(self, number: int) -> int:
        """How many open PRs name this issue, ticket or bug number."""
        return len(self._referring(number))

    def _referring(self, number: int) -> set[int]:
        mine, outside = self._references.get(number), self._external.get(number)
        if mine and outside:
            return mine | outside
        return mine or outside or set()

    # -- updates -----------------------------------------------------------------------------
    def _keys(self, features: PRFeatures):
        yield self._terms, features.terms.keys()
        yield self._paths, (features.files or {}).keys()
        yield self._identifiers, features.identifiers.keys()
        yield self._code_terms, features.code_terms.keys()
        yield self._references, features.claimed | features.mentioned
        yield self._external, features.external
        yield self._lines, features.lines.keys()

    def add(self, features: PRFeatures) -> None:
        """Index a PR head; a PR already indexed is replaced (a reopened one leaves the
        closed tier)."""
        self.remove(features.number)
        if self.recently_closed is not None:
            self.recently_closed.remove(features.number)
        self.docs[features.number] = features
        for table, keys in self._keys(features):
            for key in keys:
                table[key].add(features.number)

    def remove(self, number: int) -> None:
        old = self.docs.pop(number, None)
        if old is None:
            return
        for table, keys in self._keys(old):
            for key in keys:
                postings = table.get(key)
                if postings is not None:
                    postings.discard(number)
                    if not postings:
                        del table[key]

    def add_closed(self, features: PRFeatures) -> None:
        """Move a PR to the closed tier; past CLOSED_KEEP the longest-closed one leaves."""
        self.remove(features.number)
        if features.state == "open":
            features.state = "closed"
        if self.recently_closed is None:
            self.recently_closed = MemoryIndex()
        closed = self.recently_closed
        closed.add(features)
        if len(closed) > CLOSED_KEEP:
            oldest = min(closed.docs.values(), key=_closed_order)
            closed.remove(oldest.number)

    def get(self, number: int) -> PRFeatures | None:
        return self.docs.get(number)

    @staticmethod
    def _others(table: dict[str, set[int]], key: str, me: int) -> int:
        postings = table.get(key)
        if not postings:
            return 0
        return len(postings) - (me in postings)

    # -- queries -----------------------------------------------------------------------------
    def candidate_numbers(self, features: PRFeatures, config: ScoringConfig) -> list[int]:
        """The PRs worth scoring in full, best pre-score first."""
        limit = max(MIN_KEY_LIMIT, int(MAX_KEY_SHARE * self.size))
        pre: Counter[int] = Counter()

        # An issue many open PRs name (a tracking issue, a template's "Fixes #1234") pulls in
        # little: the weight falls with the number of PRs naming it.
        for number in features.claimed | features.mentioned | features.external:
            referring = self._referring(number)
            weight = (6.0 if number in features.claimed else 2.0) * reference_rarity(len(referring))
            for other in referring:
                pre[other] += weight
        for number in features.claimed | features.mentioned:
            if number in self.docs:
                pre[number] += 6.0
        for other in self._references.get(features.number, ()):
            pre[other] += 6.0

        for name in features.identifiers:
            postings = self._identifiers.get(name, ())
            if 0 < len(postings) <= limit:
                for other in postings:
                    pre[other] += 3.0 / math.sqrt(len(postings))

        for path in features.files or ():
            postings = self._paths.get(path, ())
            if not postings or len(postings) > limit or config.is_hot(path):
                continue
            for other in postings:
                pre[other] += 1.5 / math.sqrt(len(postings))

        size = self.size
        # The query's heaviest terms (tf-idf, title words first), counting only *other* PRs: a
        # word no other PR uses finds nothing. Ranking by rarity alone picked typos, hashes and
        # names used once, and lost true duplicates whose shared words were merely uncommon.
        me = features.number

        idf = {
            t: math.log((size + 1) / (self.term_df(t) + 1)) + 1.0
            for t in features.terms
            if 0 < self._others(self._terms, t, me) <= limit
        }
        weights = {
            t: (1.0 + math.log(features.terms[t])) * v * (2.0 if t in features.title_terms else 1.0)
            for t, v in idf.items()
        }
        ranked_terms = sorted(weights, key=lambda t: (-weights[t], t))[:TEXT_TERMS_PER_QUERY]
        norm = 4 * math.sqrt(sum(weights[t] ** 2 for t in ranked_terms)) or 1.0
        for term in ranked_terms:
            # About the term's share of a cosine with a candidate holding it once.
            weight = weights[term] * idf[term] / norm
            for other in self._terms[term]:
                pre[other] += weight

        rare_code = sorted(
            (t for t in features.code_terms if 0 < self._others(self._code_terms, t, me) <= limit),
            key=self.code_term_df,
        )[:CODE_TERMS_PER_QUERY]
        for term in rare_code:
            postings = self._code_terms[term]
            for other in postings:
                pre[other] += 0.5 / math.sqrt(len(postings))

        pre.pop(features.number, None)
        ranked = [n for n, _ in pre.most_common(SCORED_PER_QUERY)]
        if len(self.docs) - (me in self.docs) <= SCORED_PER_QUERY:
            # A small index is scored whole: generation can then lose nothing.
            seen = set(ranked)
            ranked += sorted((n for n in self.docs if n not in seen and n != me), reverse=True)
        elif len(ranked) < NEAREST_FILL:
            seen = set(ranked)
            ranked += self._nearest(features, NEAREST_FILL - len(ranked), seen | {me})
        return ranked

    def _nearest(self, features: PRFeatures, count: int, skip: set[int]) -> list[int]:
        """The ``count`` PRs opened nearest ``features`` (by date, else by number)."""
        when = features.created_at

        def distance(number: int) -> float:
            other = self.docs[number].created_at
            if when is not None and other is not None:
                return abs((when - other).total_seconds()) / 86_400 * NUMBER_PER_DAY
            return float(abs(number - features.number))

        pool = (n for n in self.docs if n not in skip)
        return heapq.nsmallest(count, pool, key=lambda n: (distance(n), -n))

    def query(self, features: PRFeatures, config: ScoringConfig, top: int = 10) -> QueryResult:
        """Rank the open PRs against ``features``; excluded kinds are reported, not ranked."""
        result = QueryResult(searched=len(self.docs) - (features.number in self.docs))
        if is_bot(features.author, config.bots):
            return result  # bots' PRs (dependency bumps) are never audited
        prepared = PreparedQuery(features, self, config)
        scored: list[Candidate] = []
        stacked_found: list[Candidate] = []
        # Every candidate's (raw score, number, closeness), listed or not: the rivals.
        raws: list[tuple[float, int, float]] = []
        for number in self.candidate_numbers(features, config):
            result.scored += 1
            other = self.docs[number]
            if is_bot(other.author, config.bots):
                continue
            if _share_commits(features, other):
                result.shared_commits.append(number)
                continue
            candidate = prepared.score(other)
            same_author = features.author and other.author.lower() == features.author.lower()
            stacked = (
                same_author or number in features.stacked_on or features.number in other.stacked_on
            )
            if not stacked:
                raws.append((candidate.raw_score, number, candidate.signals.get("closeness", 0.0)))
            if not is_listed(candidate, config):
                continue
            (stacked_found if stacked else scored).append(candidate)
        scored = _stand_clear(scored, raws, config)
        # A same-author PR is listed as stacked only where it would be listed as a rival: its
        # wording alone is judged like theirs (alike wording is no stack).
        result.stacked = [c.number for c in _stand_clear(stacked_found, raws, config)]
        scored.sort(key=lambda c: (-c.score, -c.raw_score, -c.number))
        result.candidates = scored[:top]
        result.stacked.sort()
        result.shared_commits.sort()
        if self.recently_closed:
            result.closed = self._closed_duplicates(features, config)
        return result

    def _closed_duplicates(self, features: PRFeatures, config: ScoringConfig) -> list[Candidate]:
        assert self.recently_closed is not None
        found = self.recently_closed.query(features, config, top=CLOSED_TOP * 4).candidates
        out = []
        for candidate in found:
            other = self.recently_closed.docs[candidate.number]
            if candidate.tier != LIKELY_DUPLICATE or not _recent(other, features):
                continue
            candidate.state = other.state
            out.append(candidate)
        return out[:CLOSED_TOP]


def _stand_clear(
    scored: list[Candidate], raws: list[tuple[float, int, float]], config: ScoringConfig
) -> list[Candidate]:
    """Judge each provisional text-only likely duplicate against its best rival (the highest
    raw score among the other candidates): with wording alone to go on, a PR about as alike
    to another is no sign this one is a copy. The model was fitted on the top candidate
    against the runner-up; a lower one meets the top as its rival, at a negative lead (on
    DupPR 2 such alerts, both right: each much nearer in time than the top). Below the rules'
    bar it is an overlap, kept where an overlap would be listed or its wording passes
    same_goal's bar (or it names the same issue): alike, worth a look, not called a copy. An
    alert's score is above every overlap's cap, so that consumers that sort or threshold on
    the score read it as what it is."""
    top = heapq.nlargest(2, raws)
    kept = []
    for candidate in scored:
        if candidate.tier == LIKELY_DUPLICATE and is_text_only(candidate.signals):
            rival = next(((raw, near) for raw, n, near in top if n != candidate.number), (0, 0))
            chance = alert_chance(candidate.signals, candidate.raw_score, *rival)
            candidate.signals["alert_chance"] = chance
            # NaN reads as below the bar (a comparison with NaN is False).
            if chance >= config.text_only_alert_chance:
                candidate.score = max(candidate.score, TEXT_ONLY_OVERLAP_CAP + 0.01)
            else:
                candidate.tier = OVERLAP
                candidate.score = min(candidate.score, overlap_cap(candidate.signals, config))
                signals = candidate.signals
                if not (
                    is_listed(candidate, config) or same_goal(signals) or shares_issue(signals)
                ):
                    continue
        kept.append(candidate)
    return kept


def _share_commits(a: PRFeatures, b: PRFeatures) -> bool:
    if a.head_sha and a.head_sha == b.head_sha:
        return True
    return bool(a.commits and b.commits and set(a.commits) & set(b.commits))


def _closed_order(features: PRFeatures) -> tuple[float, int]:
    when = features.closed_at or features.created_at
    return (when.timestamp() if when else float("-inf"), features.number)


def _recent(closed: PRFeatures, query: PRFeatures) -> bool:
    """Closed within CLOSED_DAYS of the query's opening (unknown dates: kept)."""
    if closed.closed_at is None or query.created_at is None:
        return True
    return (query.created_at - closed.closed_at).total_seconds() <= CLOSED_DAYS * 86_400
