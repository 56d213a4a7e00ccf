"""Reconcile: make the open-PR index match GitHub, cheaply.

The open-PR listing is read page by page with conditional requests: each page's ETag and
the PRs it held are stored, so an unchanged page answers 304 (free against the rate limit)
and its PRs are known without a body. The files of PRs that are new or whose head moved are
fetched with GraphQL, many PRs per call. PRs the listing no longer shows are closed.

GraphQL gives paths and line counts but no patches, so such rows have no hunks or added
identifiers until the PR's next ``synchronize`` event brings its diff.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bot.duplicates.records import MAX_BODY_CHARS, MAX_TITLE_CHARS, FileChange
from bot.duplicates.schema import open_pr_repos, open_prs
from bot.duplicates.store import OPEN, PRRow, mark_closed, write_row
from bot.store.schema import utcnow

log = logging.getLogger(__name__)

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


def _header(headers: dict[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


def _list_open(github: Any, owner: str, name: str, stored: dict[str, Any], stats: ReconcileStats):
    """(every open PR as {number: summary or None}, the new per-page listing state)."""
    found: dict[int, dict[str, Any] | None] = {}
    listing: dict[str, Any] = {}
    for page in range(1, MAX_PAGES + 1):
        cached = stored.get(str(page)) or {}
        headers = {"If-None-Match": cached["etag"]} if cached.get("etag") else {}
        status, response_headers, body = github.requester.requestJson(
            "GET",
            f"/repos/{owner}/{name}/pulls",
            parameters={
                "state": "open",
                "per_page": PER_PAGE,
                "page": page,
                "sort": "created",
                "direction": "asc",  # new PRs land on the last page; earlier pages stay 304
            },
            headers=headers,
        )
        stats.listing_calls += 1
        if status == 304 and cached:
            stats.listing_not_modified += 1
            entries = cached.get("prs") or []
            for number, _sha, _updated in entries:
                found[int(number)] = None
            listing[str(page)] = cached
            count = len(entries)
        elif status == 200:
            try:
                items = json.loads(body)
            except ValueError:
                raise ReconcileError(f"listing page {page}: not JSON") from None
            if not isinstance(items, list):
                raise ReconcileError(f"listing page {page}: expected a list")
            entries = []
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("number"), int):
                    found[item["number"]] = item
                    entries.append(
                        [
                            item["number"],
                            (item.get("head") or {}).get("sha"),
                            item.get("updated_at"),
                        ]
                    )
            listing[str(page)] = {"etag": _header(response_headers, "ETag"), "prs": entries}
            count = len(items)
        else:
            raise ReconcileError(f"listing page {page}: HTTP {status}")
        if count < PER_PAGE:
            break
    return found, listing


def _graphql_files(
    github: Any, owner: str, name: str, numbers: list[int], stats: ReconcileStats
) -> dict[int, dict[str, Any]]:
    """PR data with file lists, ``GRAPHQL_BATCH`` PRs per call."""
    out: dict[int, dict[str, Any]] = {}
    for start in range(0, len(numbers), GRAPHQL_BATCH):
        batch = numbers[start : start + GRAPHQL_BATCH]
        fields = (
            "number title body createdAt headRefOid author { login } "
            "files(first: 100) { nodes { path additions deletions } }"
        )
        aliases = " ".join(f"pr_{n}: pullRequest(number: {n}) {{ {fields} }}" for n in batch)
        query = (
            f"query {{ repository(owner: {json.dumps(owner)}, name: {json.dumps(name)}) "
            f"{{ {aliases} }} }}"
        )
        status, _headers, body = github.requester.requestJson(
            "POST", github.requester.graphql_url, input={"query": query, "variables": {}}
        )
        stats.graphql_calls += 1
        if status != 200:
            raise ReconcileError(f"GraphQL: HTTP {status}")
        try:
            repository = (json.loads(body).get("data") or {}).get("repository") or {}
        except (ValueError, AttributeError):
            raise ReconcileError("GraphQL: not a JSON object") from None
        for n in batch:
            node = repository.get(f"pr_{n}")
            if isinstance(node, dict):  # None: deleted or not a PR; skipped
                out[n] = node
    stats.fetched += len(out)
    return out


def reconcile(engine: sa.Engine, github: Any, repo_full_name: str) -> ReconcileStats:
    """Bring the index of ``repo_full_name`` in line with GitHub's open PRs."""
    owner, _, name = repo_full_name.partition("/")
    stats = ReconcileStats()
    with engine.connect() as connection:
        stored_listing = connection.execute(
            sa.select(open_pr_repos.c.listing).where(open_pr_repos.c.repo == repo_full_name)
        ).scalar()
        rows = {
            r.number: r
            for r in connection.execute(
                sa.select(
                    open_prs.c.number,
                    open_prs.c.state,
                    open_prs.c.head_sha,
                    open_prs.c.updated_at,
                    open_prs.c.files_known,
                ).where(open_prs.c.repo == repo_full_name)
            )
        }
    found, listing = _list_open(github, owner, name, stored_listing or {}, stats)
    stats.open_prs = len(found)

    need_files, text_only = [], []
    for number, item in found.items():
        row = rows.get(number)
        head = (item or {}).get("head", {}).get("sha") if item else None
        if row is None or not row.files_known or (head and head != row.head_sha):
            need_files.append(number)
        elif row.state != OPEN or (item and (item.get("updated_at") or "") > row.updated_at):
            text_only.append(item)
    fetched = _graphql_files(github, owner, name, sorted(need_files), stats)

    with engine.begin() as connection:
        for number, node in fetched.items():
            item = found.get(number) or {}
            files = [
                FileChange(f["path"], f.get("additions") or 0, f.get("deletions") or 0)
                for f in ((node.get("files") or {}).get("nodes") or [])
                if isinstance(f, dict) and isinstance(f.get("path"), str)
            ]
            row = PRRow(
                repo=repo_full_name,
                number=number,
                state=OPEN,
                title=(node.get("title") or "")[:MAX_TITLE_CHARS],
                body=(node.get("body") or "")[:MAX_BODY_CHARS],
                author=(node.get("author") or {}).get("login") or "",
                created_at=node.get("createdAt"),
                updated_at=item.get("updated_at") or "",
                head_sha=node.get("headRefOid") or "",
                files=files,
                patches_known=False,
            )
            stats.written += write_row(connection, row)
        for item in text_only:
            if item is None:
                continue
            row = PRRow(
                repo=repo_full_name,
                number=item["number"],
                state=OPEN,
                title=(item.get("title") or "")[:MAX_TITLE_CHARS],
                body=(item.get("body") or "")[:MAX_BODY_CHARS],
                author=(item.get("user") or {}).get("login") or "",
                created_at=item.get("created_at"),
                updated_at=item.get("updated_at") or "",
                head_sha=(item.get("head") or {}).get("sha") or "",
                files=None,
                patches_known=False,
            )
            stats.written += write_row(connection, row)
        gone = [n for n, r in rows.items() if r.state == OPEN and n not in found]
        stats.closed = mark_closed(connection, repo_full_name, gone)
        connection.execute(
            sa.update(open_pr_repos)
            .where(open_pr_repos.c.repo == repo_full_name)
            .values(listing=listing, reconciled_at=utcnow())
        )
        if not connection.execute(
            sa.select(open_pr_repos.c.repo).where(open_pr_repos.c.repo == repo_full_name)
        ).first():
            connection.execute(
                sa.insert(open_pr_repos).values(
                    repo=repo_full_name, generation=0, listing=listing, reconciled_at=utcnow()
                )
            )
    log.info("reconciled %s: %s", repo_full_name, stats)
    return stats
