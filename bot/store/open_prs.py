"""The open-PR index in the database: updates from ``pull_request`` events and reconcile,
and the index the duplicates check queries (``DatabaseIndex``).

Events never re-read the world: each writes one row and bumps the repository's generation.
A process keeps the inverted indexes in memory and, before each query, reads only the rows
written since its last look (one small query when nothing changed).
"""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa

from bot.duplicates.embeddings import default_model, embed_texts
from bot.duplicates.features import PRFeatures, build_features, closed_state
from bot.duplicates.index import CLOSED_KEEP, MemoryIndex, QueryResult
from bot.duplicates.reconcile import StoredPR
from bot.duplicates.records import CLOSED, OPEN, PRRow, file_changes, parse_time, row_from_event
from bot.duplicates.scoring import ScoringConfig
from bot.duplicates.template import LineStats
from bot.store.dialect import upsert
from bot.store.schema import open_pr_repos, open_prs, utcnow


def _bump_generation(connection: sa.Connection, repo: str) -> int:
    """The repository's next generation; the row lock serialises concurrent writers."""
    statement = (
        upsert(connection, open_pr_repos)
        .values(repo=repo, generation=1, listing={})
        .on_conflict_do_update(
            index_elements=["repo"],
            set_={"generation": open_pr_repos.c.generation + 1},
        )
        .returning(open_pr_repos.c.generation)
    )
    return int(connection.execute(statement).scalar_one())


def _existing(connection: sa.Connection, repo: str, number: int) -> sa.Row | None:
    return connection.execute(
        sa.select(open_prs).where(open_prs.c.repo == repo, open_prs.c.number == number)
    ).first()


def write_row(connection: sa.Connection, row: PRRow, template: LineStats | None = None) -> bool:
    """Insert or replace one PR; False (and no write) when a newer update is already stored.

    With ``files`` None the stored code features are kept when the head is unchanged, so an
    ``edited`` event refreshes the text without losing the diff. ``template``: the index's
    line counts (``template_lines``), whose template lines the embedded text leaves out.
    """
    existing = _existing(connection, row.repo, row.number)
    if existing is not None and existing.updated_at and row.updated_at < existing.updated_at:
        return _late_diff(connection, existing, row)
    kept_text = existing is not None and (existing.title, existing.body) == (row.title, row.body)
    stored_embedding = (existing.features or {}).get("embedding") if kept_text else None
    features = build_features(
        row.number,
        title=row.title,
        body=row.body,
        author=row.author,
        created_at=parse_time(row.created_at),
        head_sha=row.head_sha,
        files=row.files,
        # The text's embedding when the extra is installed; an unchanged text keeps its own.
        embedding=stored_embedding
        if isinstance(stored_embedding, str) and stored_embedding
        else embed_texts([(row.title, row.body)], template)[0],
    )
    features.state = closed_state(row.state, row.merged)
    features.closed_at = parse_time(row.closed_at)
    files_known, patches_known = row.files is not None, row.patches_known
    if row.files is None and existing is not None and existing.head_sha == row.head_sha:
        kept = PRFeatures.from_json(existing.features)
        features.files, features.identifiers = kept.files, kept.identifiers
        features.code_terms = kept.code_terms
        files_known, patches_known = existing.files_known, existing.patches_known
    seq = _bump_generation(connection, row.repo)
    values = {
        "state": row.state,
        "title": row.title,
        "body": row.body,
        "author": row.author,
        "created_at": parse_time(row.created_at),
        "updated_at": row.updated_at,
        "head_sha": row.head_sha,
        "files_known": files_known,
        "patches_known": patches_known,
        "features": features.to_json(),
        "seq": seq,
    }
    connection.execute(
        upsert(connection, open_prs)
        .values(repo=row.repo, number=row.number, **values)
        .on_conflict_do_update(index_elements=["repo", "number"], set_=values)
    )
    if row.state == CLOSED:
        prune_closed(connection, row.repo)
    return True


def template_lines(engine: sa.Engine, repo: str) -> LineStats | None:
    """The repository's line counts as the index holds them, for the text a new row embeds;
    None where no model embeds (then nothing needs them and nothing is read)."""
    if default_model() is None:
        return None
    return DatabaseIndex(engine, repo).template_lines()


def prune_closed(connection: sa.Connection, repo: str) -> int:
    """Keep the CLOSED_KEEP most recently closed rows of ``repo``; delete the rest."""
    keep = (
        sa.select(open_prs.c.number)
        .where(open_prs.c.repo == repo, open_prs.c.state == CLOSED)
        .order_by(open_prs.c.seq.desc())
        .limit(CLOSED_KEEP)
    )
    kept = [n for (n,) in connection.execute(keep)]
    if len(kept) < CLOSED_KEEP:
        return 0
    result = connection.execute(
        sa.delete(open_prs).where(
            open_prs.c.repo == repo,
            open_prs.c.state == CLOSED,
            open_prs.c.number.not_in(kept),
        )
    )
    return result.rowcount or 0


def _late_diff(connection: sa.Connection, existing: sa.Row, row: PRRow) -> bool:
    """An older event's diff of the head still stored (a pipeline job finishing after a later
    ``edited``): keep the newer text and state, take the code features. Anything else: no."""
    if row.files is None or existing.head_sha != row.head_sha or existing.state != OPEN:
        return False
    if existing.patches_known and not row.patches_known:
        return False  # reconcile's path-only files never replace a diff with hunks
    coded = build_features(row.number, head_sha=row.head_sha, files=row.files)
    features = PRFeatures.from_json(existing.features)
    features.files, features.identifiers = coded.files, coded.identifiers
    features.code_terms = coded.code_terms
    connection.execute(
        sa.update(open_prs)
        .where(open_prs.c.repo == row.repo, open_prs.c.number == row.number)
        .values(
            files_known=True,
            patches_known=row.patches_known,
            features=features.to_json(),
            seq=_bump_generation(connection, row.repo),
        )
    )
    return True


def mark_closed(connection: sa.Connection, repo: str, numbers: list[int]) -> int:
    """Close rows still open (reconcile found them missing from the listing)."""
    closed = 0
    for number in numbers:
        seq = _bump_generation(connection, repo)
        result = connection.execute(
            sa.update(open_prs)
            .where(open_prs.c.repo == repo, open_prs.c.number == number, open_prs.c.state == OPEN)
            .values(state=CLOSED, seq=seq)
        )
        closed += result.rowcount or 0
    if numbers:
        prune_closed(connection, repo)
    return closed


def apply_pull_request_event(
    engine: sa.Engine, payload: dict[str, Any], files: list[Any] | None
) -> None:
    """Update the index from one ``pull_request`` webhook payload.

    ``files`` is the diff the worker computed (``ChangedFile`` or ``FileChange`` items) for
    opened/synchronize/reopened, or None for edited/closed: then only text and state change.
    Payloads that are not about a PR, or are older than what is stored, change nothing.
    """
    row = row_from_event(payload, files)
    if row is None:
        return
    template = template_lines(engine, row.repo)  # read before the write transaction opens
    with engine.begin() as connection:
        write_row(connection, row, template)


def record_diff(engine: sa.Engine, repo: str, number: int, head_sha: str, files: list[Any]) -> bool:
    """The code features of ``head_sha``'s diff, as the pipeline computed it; the text and
    state the PR's events recorded stay. False when the index holds another head or no row
    (a newer push got there first: its own run records its diff)."""
    with engine.begin() as connection:
        existing = _existing(connection, repo, number)
        if existing is None:
            return False
        row = PRRow(
            repo=repo,
            number=number,
            state=existing.state,
            title=existing.title,
            body=existing.body,
            author=existing.author,
            created_at=None,
            updated_at=existing.updated_at or "",
            head_sha=head_sha,
            files=file_changes(files),
            patches_known=True,
        )
        return _late_diff(connection, existing, row)


def open_pr_count(engine: sa.Engine, repo: str) -> int:
    """How many open PRs the index holds for ``repo`` (0: the worker should reconcile)."""
    with engine.connect() as connection:
        return int(
            connection.execute(
                sa.select(sa.func.count())
                .select_from(open_prs)
                .where(open_prs.c.repo == repo, open_prs.c.state == OPEN)
            ).scalar_one()
        )


class _Mirror:
    """One process's in-memory copy of one repository's index, and how far it has read."""

    def __init__(self) -> None:
        self.index = MemoryIndex()
        self.generation = 0
        self.lock = threading.Lock()


_MIRRORS: dict[tuple[str, str], _Mirror] = {}
_MIRRORS_LOCK = threading.Lock()


class DatabaseIndex:
    """``OpenPRIndex`` over the database for one repository (what the worker hands the check)."""

    def __init__(self, engine: sa.Engine, repo_full_name: str) -> None:
        self.engine = engine
        self.repo = repo_full_name
        key = (engine.url.render_as_string(hide_password=True), repo_full_name)
        with _MIRRORS_LOCK:
            self._mirror = _MIRRORS.setdefault(key, _Mirror())

    def sync(self) -> MemoryIndex:
        """Bring the in-memory index up to date: rows written since the last sync only."""
        mirror = self._mirror
        with mirror.lock, self.engine.connect() as connection:
            generation = connection.execute(
                sa.select(open_pr_repos.c.generation).where(open_pr_repos.c.repo == self.repo)
            ).scalar()
            if generation is None or generation == mirror.generation:
                return mirror.index
            if generation < mirror.generation:  # database replaced under us: start over
                mirror.index, mirror.generation = MemoryIndex(), 0
            rows = connection.execute(
                sa.select(open_prs.c.number, open_prs.c.state, open_prs.c.features)
                .where(open_prs.c.repo == self.repo, open_prs.c.seq > mirror.generation)
                .order_by(open_prs.c.seq)
            )
            for _number, state, features in rows:
                if state == OPEN:
                    mirror.index.add(PRFeatures.from_json(features))
                else:
                    # Closed and merged PRs stay comparable, in a bounded tier of their own.
                    mirror.index.add_closed(PRFeatures.from_json(features))
            mirror.generation = generation
            return mirror.index

    def query(self, features: PRFeatures, config: ScoringConfig, top: int = 10) -> QueryResult:
        index = self.sync()
        with self._mirror.lock:  # another thread's sync must not change it mid-query
            return index.query(features, config, top=top)

    def template_lines(self) -> MemoryIndex:
        return self.sync()

    def __len__(self) -> int:
        return len(self.sync())


def needs_reconcile(engine: sa.Engine, repo: str) -> bool:
    """True until a reconcile has listed ``repo``: events alone only know the PRs they saw."""
    with engine.connect() as connection:
        row = connection.execute(
            sa.select(open_pr_repos.c.reconciled_at).where(open_pr_repos.c.repo == repo)
        ).first()
    return row is None or row.reconciled_at is None


def reconcile_state(engine: sa.Engine, repo: str) -> tuple[dict[str, Any], dict[int, StoredPR]]:
    """(the listing's kept per-page state, every PR the index holds for ``repo``)."""
    with engine.connect() as connection:
        listing = connection.execute(
            sa.select(open_pr_repos.c.listing).where(open_pr_repos.c.repo == repo)
        ).scalar()
        stored = {
            r.number: StoredPR(r.number, r.state, r.head_sha, r.updated_at, r.files_known)
            for r in connection.execute(
                sa.select(
                    open_prs.c.number,
                    open_prs.c.state,
                    open_prs.c.head_sha,
                    open_prs.c.updated_at,
                    open_prs.c.files_known,
                ).where(open_prs.c.repo == repo)
            )
        }
    return listing or {}, stored


def save_reconcile(
    engine: sa.Engine, repo: str, rows: list[PRRow], gone: list[int], listing: dict[str, Any]
) -> tuple[int, int]:
    """Write what reconcile found, in one transaction; (rows written, PRs closed)."""
    template = template_lines(engine, repo)
    with engine.begin() as connection:
        written = sum(write_row(connection, row, template) for row in rows)
        closed = mark_closed(connection, repo, gone)
        updated = connection.execute(
            sa.update(open_pr_repos)
            .where(open_pr_repos.c.repo == repo)
            .values(listing=listing, reconciled_at=utcnow())
        )
        if not updated.rowcount:
            connection.execute(
                sa.insert(open_pr_repos).values(
                    repo=repo, generation=0, listing=listing, reconciled_at=utcnow()
                )
            )
    return written, closed
