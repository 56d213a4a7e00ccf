"""Reconcile the open-PR index with GitHub: the calls, the decisions, the writes, in order.

The decisions are pure (``bot.duplicates.reconcile``), the calls are the installation
client's (``bot.github.app``) and the writes the store's (``bot.store.open_prs``); this loop
only passes answers between them. A failed call raises ``ReconcileError`` before anything is
written, so the index is left as it was.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import sqlalchemy as sa

from bot.duplicates.reconcile import (
    GRAPHQL_BATCH,
    MAX_PAGES,
    PER_PAGE,
    ReconcileError,
    ReconcileStats,
    plan_reconcile,
    read_files_answer,
    read_listing_page,
    rows_with_files,
)
from bot.github.app import RawAnswer
from bot.store import open_prs

log = logging.getLogger(__name__)

__all__ = ["ReconcileError", "ReconcileStats", "reconcile"]


class OpenPullsSource(Protocol):
    """The two calls reconcile makes (``bot.github.app.InstallationClient``)."""

    def list_open_pulls(
        self, full_name: str, *, page: int, per_page: int, etag: str | None = None
    ) -> RawAnswer: ...

    def pull_files(self, full_name: str, numbers: list[int]) -> RawAnswer: ...


def reconcile(engine: sa.Engine, github: OpenPullsSource, repo: str) -> ReconcileStats:
    """Bring the index of ``repo`` in line with GitHub's open PRs."""
    stats = ReconcileStats()
    kept_listing, stored = open_prs.reconcile_state(engine, repo)
    listed: dict[int, dict[str, Any] | None] = {}
    listing: dict[str, Any] = {}
    for page in range(1, MAX_PAGES + 1):
        cached = kept_listing.get(str(page)) or {}
        answer = github.list_open_pulls(repo, page=page, per_page=PER_PAGE, etag=cached.get("etag"))
        stats.listing_calls += 1
        read = read_listing_page(page, answer.status, answer.etag, answer.body, cached)
        stats.listing_not_modified += read.not_modified
        listed.update(read.prs)
        listing[str(page)] = read.state
        if read.count < PER_PAGE:
            break
    stats.open_prs = len(listed)
    plan = plan_reconcile(repo, listed, stored)
    fetched: dict[int, dict[str, Any]] = {}
    for start in range(0, len(plan.need_files), GRAPHQL_BATCH):
        batch = plan.need_files[start : start + GRAPHQL_BATCH]
        answer = github.pull_files(repo, batch)
        stats.graphql_calls += 1
        fetched.update(read_files_answer(answer.status, answer.body, batch))
    stats.fetched = len(fetched)
    rows = rows_with_files(repo, fetched, listed) + plan.text_only
    stats.written, stats.closed = open_prs.save_reconcile(engine, repo, rows, plan.gone, listing)
    log.info("reconciled %s: %s", repo, stats)
    return stats
