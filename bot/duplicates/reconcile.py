"""Reconcile's decisions: what GitHub's answers mean for the open-PR index. No I/O here.

The open-PR listing is read page by page with conditional requests: each page's ETag and
the PRs it held are kept, so an unchanged page answers 304 (free against the rate limit)
and its PRs are known without a body. The files of PRs that are new or whose head moved are
fetched with GraphQL, many PRs per call. PRs the listing no longer shows are closed.

GraphQL gives paths and line counts but no patches, so such rows have no hunks or added
identifiers until the PR's next ``synchronize`` event brings its diff. The calls are made by
``bot.github.app.InstallationClient`` and the rows written by ``bot.store.open_prs``; the
thin loop joining them is ``bot.repair.reconcile``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bot.duplicates.records import MAX_BODY_CHARS, MAX_TITLE_CHARS, OPEN, FileChange, PRRow

PER_PAGE = 100
GRAPHQL_BATCH = 50
MAX_PAGES = 500


class ReconcileError(RuntimeError):
    """GitHub answered something reconcile cannot use (the index is left as it was)."""


@dataclass
class ReconcileStats:
    listing_calls: int = 0
    listing_not_modified: int = 0
    graphql_calls: int = 0
    fetched: int = 0
    written: int = 0
    closed: int = 0
    open_prs: int = 0

    @property
    def github_calls(self) -> int:
        return self.listing_calls + self.graphql_calls


@dataclass(frozen=True)
class StoredPR:
    """What the index holds about one PR, as far as reconcile's decisions need it."""

    number: int
    state: str
    head_sha: str
    updated_at: str
    files_known: bool


@dataclass
class ListedPage:
    """One listing page read: its PRs ({number: summary, or None when known from a 304})."""

    prs: dict[int, dict[str, Any] | None]
    state: dict[str, Any]  # what to keep for the next conditional request
    count: int  # how many PRs the page held (fewer than PER_PAGE: the last page)
    not_modified: bool = False


@dataclass
class ReconcilePlan:
    """What to do: fetch the files of some PRs, rewrite the text of others, close the rest."""

    need_files: list[int] = field(default_factory=list)
    text_only: list[PRRow] = field(default_factory=list)
    gone: list[int] = field(default_factory=list)


def read_listing_page(
    page: int, status: int, etag: str | None, body: str, cached: dict[str, Any]
) -> ListedPage:
    """One answer of ``GET /repos/{repo}/pulls?state=open``, with the page's kept state."""
    if status == 304 and cached:
        entries = cached.get("prs") or []
        found: dict[int, dict[str, Any] | None] = {int(n): None for n, _sha, _updated in entries}
        return ListedPage(found, cached, len(entries), not_modified=True)
    if status != 200:
        raise ReconcileError(f"listing page {page}: HTTP {status}")
    try:
        items = json.loads(body)
    except ValueError:
        raise ReconcileError(f"listing page {page}: not JSON") from None
    if not isinstance(items, list):
        raise ReconcileError(f"listing page {page}: expected a list")
    found, entries = {}, []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("number"), int):
            found[item["number"]] = item
            entries.append([item["number"], _head(item), item.get("updated_at")])
    return ListedPage(found, {"etag": etag, "prs": entries}, len(items))


def _head(item: dict[str, Any]) -> str | None:
    head = item.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    return sha if isinstance(sha, str) else None


def _text(value: Any, limit: int) -> str:
    # PostgreSQL text cannot hold NUL; a body carrying one must not fail the whole write.
    return value[:limit].replace("\x00", "") if isinstance(value, str) else ""


def _login(value: Any) -> str:
    login = value.get("login") if isinstance(value, dict) else None
    return _text(login, 200)


def plan_reconcile(
    repo: str, listed: dict[int, dict[str, Any] | None], stored: dict[int, StoredPR]
) -> ReconcilePlan:
    """Which PRs need their files, which only a text refresh, and which have closed."""
    plan = ReconcilePlan()
    for number, item in listed.items():
        row = stored.get(number)
        head = _head(item) if item else None
        if row is None or not row.files_known or (head and head != row.head_sha):
            plan.need_files.append(number)
        elif item and (row.state != OPEN or _text(item.get("updated_at"), 40) > row.updated_at):
            plan.text_only.append(
                PRRow(
                    repo=repo,
                    number=number,
                    state=OPEN,
                    title=_text(item.get("title"), MAX_TITLE_CHARS),
                    body=_text(item.get("body"), MAX_BODY_CHARS),
                    author=_login(item.get("user")),
                    created_at=_text(item.get("created_at"), 40) or None,
                    updated_at=_text(item.get("updated_at"), 40),
                    head_sha=head or "",
                    files=None,
                    patches_known=False,
                )
            )
    plan.need_files.sort()
    plan.gone = sorted(n for n, row in stored.items() if row.state == OPEN and n not in listed)
    return plan


def read_files_answer(status: int, body: str, batch: list[int]) -> dict[int, dict[str, Any]]:
    """The PR nodes of one batched files query (a PR deleted meanwhile is left out)."""
    if status != 200:
        raise ReconcileError(f"GraphQL: HTTP {status}")
    try:
        repository = (json.loads(body).get("data") or {}).get("repository") or {}
    except (ValueError, AttributeError):
        raise ReconcileError("GraphQL: not a JSON object") from None
    if not isinstance(repository, dict):
        raise ReconcileError("GraphQL: repository is not an object")
    out = {}
    for number in batch:
        node = repository.get(f"pr_{number}")
        if isinstance(node, dict):  # None: deleted or not a PR; skipped
            out[number] = node
    return out


def rows_with_files(
    repo: str, fetched: dict[int, dict[str, Any]], listed: dict[int, dict[str, Any] | None]
) -> list[PRRow]:
    """Index rows for the PRs whose files GraphQL gave (paths and counts, no patches)."""
    rows = []
    for number, node in sorted(fetched.items()):
        item = listed.get(number) or {}
        files_node = node.get("files")
        nodes = files_node.get("nodes") if isinstance(files_node, dict) else None
        files = [
            FileChange(f["path"], _count(f.get("additions")), _count(f.get("deletions")))
            for f in (nodes if isinstance(nodes, list) else [])
            if isinstance(f, dict) and isinstance(f.get("path"), str)
        ]
        rows.append(
            PRRow(
                repo=repo,
                number=number,
                state=OPEN,
                title=_text(node.get("title"), MAX_TITLE_CHARS),
                body=_text(node.get("body"), MAX_BODY_CHARS),
                author=_login(node.get("author")),
                created_at=_text(node.get("createdAt"), 40) or None,
                updated_at=_text(item.get("updated_at"), 40),
                head_sha=_text(node.get("headRefOid"), 64),
                files=files,
                patches_known=False,
            )
        )
    return rows


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
