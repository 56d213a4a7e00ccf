"""Tables of the open-PR index (migration 0002), on the store's shared metadata.

Each open PR keeps its raw text and its features (JSON); the inverted indexes are rebuilt in
memory from these rows and then kept up to date incrementally, following ``seq``.
"""

from __future__ import annotations

import sqlalchemy as sa

from bot.store.schema import Json, UTCDateTime, metadata

# One row per PR ever seen open. Closing keeps the row (state "closed") so that processes
# syncing by ``seq`` learn about the removal.
open_prs = sa.Table(
    "open_prs",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("title", sa.Text(), nullable=False),
    sa.Column("body", sa.Text(), nullable=False),
    sa.Column("author", sa.String(200), nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=True),
    # GitHub's updated_at of the payload last applied: an older event never overwrites a newer.
    sa.Column("updated_at", sa.String(40), nullable=False),
    sa.Column("head_sha", sa.String(64), nullable=False),
    # Whether the file list (and so the code features) is known, and whether it had patches.
    sa.Column("files_known", sa.Boolean(), nullable=False),
    sa.Column("patches_known", sa.Boolean(), nullable=False),
    sa.Column("features", Json, nullable=False),
    # The repository generation at the last write: readers fetch rows newer than they have.
    sa.Column("seq", sa.BigInteger(), nullable=False),
    sa.Index("ix_open_prs_repo_seq", "repo", "seq"),
)

# Per repository: a counter bumped by every write, and the listing's ETags.
open_pr_repos = sa.Table(
    "open_pr_repos",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("generation", sa.BigInteger(), nullable=False),
    # {"<page>": {"etag": "...", "prs": [[number, head_sha, updated_at], ...]}}
    sa.Column("listing", Json, nullable=False),
    sa.Column("reconciled_at", UTCDateTime(), nullable=True),
)
