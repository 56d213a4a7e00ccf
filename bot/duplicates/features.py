"""Everything the audit compares about one PR, computed once per head and stored as JSON.

Features are independent of rules (hot paths and thresholds apply at scoring time), so the
database keeps them as they are and a rule change needs no re-indexing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot.duplicates.code import (
    LineRange,
    base_ranges,
    changed_definitions,
    code_terms,
    identifiers_added,
)
from bot.duplicates.embeddings import embed_texts, unpack
from bot.duplicates.records import (
    MAX_BODY_CHARS,
    MAX_FILES,
    MAX_TITLE_CHARS,
    FileChange,
    PRRecord,
    parse_time,
)
from bot.duplicates.template import LineStats, body_lines
from bot.duplicates.text import (
    claimed_issues,
    clean_body,
    external_references,
    mentioned_numbers,
    stacked_on,
    tokens,
)

if TYPE_CHECKING:
    from bot.core.snapshot import Snapshot

# Title words count this many times in the combined text; the title also has its own signal.
TITLE_WEIGHT = 1


@dataclass
class FileFeature:
    additions: int = 0
    deletions: int = 0
    ranges: list[LineRange] = field(default_factory=list)
    # The functions and classes its hunks edit (git's hunk-header context).
    definitions: list[str] = field(default_factory=list)


@dataclass
class PRFeatures:
    """One PR head, reduced to the signals the scorer compares."""

    number: int
    title: str = ""
    author: str = ""
    created_at: datetime | None = None
    head_sha: str = ""
    commits: list[str] = field(default_factory=list)
    # None when the source said nothing about files (a text-only record).
    files: dict[str, FileFeature] | None = None
    # identifier -> the paths whose added lines define it
    identifiers: dict[str, list[str]] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)
    mentioned: set[int] = field(default_factory=set)
    # Ticket and bug numbers of trackers outside the repository (never a PR number).
    external: set[int] = field(default_factory=set)
    # PRs this one says it builds on: stacked work, never a duplicate.
    stacked_on: set[int] = field(default_factory=set)
    terms: Counter[str] = field(default_factory=Counter)
    title_terms: Counter[str] = field(default_factory=Counter)
    code_terms: Counter[str] = field(default_factory=Counter)
    # The body's short lines (bot.duplicates.template): digest -> their words, so the words of
    # the repository's PR template can be taken out once the index knows which lines it has.
    lines: dict[str, list[str]] = field(default_factory=dict)
    # The text's sentence embedding, packed (bot.duplicates.embeddings); "" without the extra.
    embedding: str = ""
    # "open", "merged" or "closed" (unmerged), and when a closed PR closed.
    state: str = "open"
    closed_at: datetime | None = None
    # Scoring's cache of vector norms: kind -> (index size when computed, norm).
    norms: dict[str, tuple[int, float]] = field(default_factory=dict, compare=False, repr=False)
    # Scoring's cache of the terms without template lines: (index size when computed, terms).
    own_terms: tuple[int, Counter[str]] | None = field(default=None, compare=False, repr=False)
    _vector: tuple[float, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def vector(self) -> tuple[float, ...]:
        """The embedding unpacked (once); () when there is none."""
        if self._vector is None:
            self._vector = unpack(self.embedding) if self.embedding else ()
        return self._vector

    @property
    def has_files(self) -> bool:
        return bool(self.files)

    @property
    def has_patches(self) -> bool:
        """Whether line ranges are known (GraphQL-reconciled rows and some exports lack them)."""
        return any(f.ranges for f in (self.files or {}).values())

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "author": self.author,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "head_sha": self.head_sha,
            "commits": self.commits,
            "files": None
            if self.files is None
            else {
                path: [f.additions, f.deletions, [[r.start, r.end] for r in f.ranges]]
                + ([f.definitions] if f.definitions else [])
                for path, f in self.files.items()
            },
            "identifiers": self.identifiers,
            "claimed": sorted(self.claimed),
            "mentioned": sorted(self.mentioned),
            "external": sorted(self.external),
            "stacked_on": sorted(self.stacked_on),
            "terms": dict(self.terms),
            "title_terms": dict(self.title_terms),
            "code_terms": dict(self.code_terms),
            **({"lines": self.lines} if self.lines else {}),
            **({"embedding": self.embedding} if self.embedding else {}),
            **({"state": self.state} if self.state != "open" else {}),
            **({"closed_at": self.closed_at.isoformat()} if self.closed_at else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PRFeatures:
        files = data.get("files")
        return cls(
            number=int(data["number"]),
            title=data.get("title") or "",
            author=data.get("author") or "",
            created_at=parse_time(data.get("created_at")),
            head_sha=data.get("head_sha") or "",
            commits=list(data.get("commits") or []),
            files=None
            if files is None
            else {path: _file_feature(value) for path, value in files.items()},
            identifiers={k: list(v) for k, v in (data.get("identifiers") or {}).items()},
            claimed=set(data.get("claimed") or []),
            mentioned=set(data.get("mentioned") or []),
            external=set(data.get("external") or []),
            stacked_on=set(data.get("stacked_on") or []),
            terms=Counter(data.get("terms") or {}),
            title_terms=Counter(data.get("title_terms") or {}),
            code_terms=Counter(data.get("code_terms") or {}),
            lines=_lines(data.get("lines")),
            embedding=data.get("embedding") if isinstance(data.get("embedding"), str) else "",
            state=data.get("state") if data.get("state") in ("merged", "closed") else "open",
            closed_at=parse_time(data.get("closed_at")),
        )


def _lines(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        return {}  # rows stored before template lines were kept
    return {str(k): [str(w) for w in v] for k, v in value.items() if isinstance(v, list)}


def _file_feature(value: list[Any]) -> FileFeature:
    # [additions, deletions, ranges] as stored before definitions were kept, or with them.
    additions, deletions, ranges = value[:3]
    definitions = list(value[3]) if len(value) > 3 else []
    return FileFeature(additions, deletions, [LineRange(s, e) for s, e in ranges], definitions)


def text_terms(
    title: str, body: str, cleaned_body: str | None = None
) -> tuple[Counter[str], Counter[str]]:
    """(all terms with the title weighted up, title terms alone)."""
    # The title's [Component] tags are words too: "[WebProfilerBundle]" on both says the same
    # part of the project (DupPR: 5 more rank-1 hits on symfony and symfony-docs, no repository
    # fewer); tags most PRs carry ("[Bugfix]") get no weight from their frequency.
    title_terms = Counter(tokens(title or ""))
    terms = Counter(tokens(clean_body(body) if cleaned_body is None else cleaned_body))
    for term, count in title_terms.items():
        terms[term] += TITLE_WEIGHT * count
    return terms, title_terms


def build_features(
    number: int,
    *,
    title: str = "",
    body: str = "",
    author: str = "",
    created_at: datetime | None = None,
    head_sha: str = "",
    files: list[FileChange] | None = None,
    commits: list[str] | None = None,
    embedding: str = "",
) -> PRFeatures:
    """Features from the raw parts of a PR (any of which may be empty); ``embedding`` is the
    text's packed sentence embedding, when the caller has a model (``embeddings.embed_texts``)."""
    cleaned = clean_body(body)
    terms, title_terms = text_terms(title, body, cleaned)
    file_features: dict[str, FileFeature] | None = None
    identifiers: dict[str, list[str]] = {}
    if files is not None:
        file_features = {}
        for change in files:
            file_features[change.path] = FileFeature(
                change.additions,
                change.deletions,
                base_ranges(change.patch),
                changed_definitions(change.patch) if not change.binary else [],
            )
            if change.patch and not change.binary:
                for name in identifiers_added(change):
                    identifiers.setdefault(name, []).append(change.path)
    claimed = claimed_issues(body, title)
    return PRFeatures(
        number=number,
        title=title,
        author=author,
        created_at=created_at,
        head_sha=head_sha,
        commits=list(commits or []),
        files=file_features,
        identifiers=identifiers,
        claimed=claimed,
        mentioned=mentioned_numbers(body, title) - claimed - {number},
        external=external_references(body, title),
        stacked_on=stacked_on(body, title) - {number},
        terms=terms,
        title_terms=title_terms,
        code_terms=code_terms(files) if files else Counter(),
        lines=body_lines(cleaned),
        embedding=embedding,
    )


def closed_state(state: str, merged: bool) -> str:
    """``open``, ``merged`` or ``closed`` from a record's or row's state and merge flag."""
    if merged:
        return "merged"
    return "open" if (state or "open").lower() == "open" else "closed"


def features_from_record(record: PRRecord, embedding: str = "") -> PRFeatures:
    features = build_features(
        record.number,
        title=record.title,
        body=record.body,
        author=record.author,
        created_at=record.created_at,
        head_sha=record.head_sha,
        files=record.files,
        commits=record.commits,
        embedding=embedding,
    )
    features.state = closed_state(record.state, record.merged)
    features.closed_at = record.closed_at
    return features


def features_from_snapshot(snapshot: Snapshot, template: LineStats | None = None) -> PRFeatures:
    """The checked PR, from the snapshot the worker or ``prbot check`` built; ``template``: the
    index's line counts, whose template lines its embedded text leaves out."""
    files = [
        FileChange(f.path, f.additions, f.deletions, f.patch, f.binary)
        for f in snapshot.files[:MAX_FILES]
    ]
    title, body = (snapshot.title or "")[:MAX_TITLE_CHARS], (snapshot.body or "")[:MAX_BODY_CHARS]
    return build_features(
        snapshot.number or 0,
        title=title,
        body=body,
        author=snapshot.author,
        created_at=parse_time(snapshot.created_at),
        head_sha=snapshot.head_sha,
        files=files,
        embedding=embed_texts([(title, body)], template)[0],
    )


def is_bot(author: str, extra_bots: list[str] | tuple[str, ...] = ()) -> bool:
    """dependabot[bot], renovate[bot] and friends, plus any account the rules name."""
    name = (author or "").lower()
    return name.endswith("[bot]") or name in {b.lower() for b in extra_bots}
