"""Tables of dispatched GPU jobs and head approvals (migration 0004), on the shared metadata.

A job record is one (PR head, job, side) pair: the side is ``head``, or ``base`` for the
base half of a benchmark comparison. The unique key is what makes dispatch idempotent: the
record is claimed (inserted or moved to ``queued`` with a new ``dispatch_key``) before the
engine is called, and the build id is written after, so a retry finds what it started.
"""

from __future__ import annotations

import sqlalchemy as sa

from bot.store.schema import BigId, Json, UTCDateTime, metadata

# A record's states are bot/jobs/records.py's (selected ... canceled).
ci_jobs = sa.Table(
    "ci_jobs",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("repo", sa.String(300), nullable=False),
    sa.Column("number", sa.Integer(), nullable=False),
    sa.Column("head_sha", sa.String(64), nullable=False),
    sa.Column("name", sa.String(300), nullable=False),
    sa.Column("side", sa.String(8), nullable=False),
    # What the build runs on: the head, or the merge base for a benchmark's base side.
    sa.Column("commit_sha", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("engine", sa.String(50), nullable=False),
    sa.Column("hardware", sa.String(100), nullable=False),
    sa.Column("step_key", sa.String(200), nullable=True),
    sa.Column("spec", Json, nullable=False),  # backends, config, reason: what was selected
    sa.Column("state", sa.String(20), nullable=False),
    sa.Column("attempt", sa.Integer(), nullable=False),
    # Unique per claim: the engine's build carries it in its meta-data, so a retry after a
    # crash between claim and record can find the build it made.
    sa.Column("dispatch_key", sa.String(200), nullable=True),
    sa.Column("build_id", sa.String(100), nullable=True),
    sa.Column("build_number", sa.BigInteger(), nullable=True),
    sa.Column("build_url", sa.Text(), nullable=True),
    sa.Column("job_url", sa.Text(), nullable=True),
    sa.Column("results", Json, nullable=True),  # benchmark runs: [{config label: seconds}]
    sa.Column("error", sa.Text(), nullable=True),
    # A failed job's classification (bot/jobs/ci_signal.py: new, flaky, broken_trunk,
    # unknown, with its reason and evidence), for the attempt it was made for (migration 0006).
    sa.Column("signal", Json, nullable=True),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.UniqueConstraint("repo", "number", "head_sha", "name", "side", name="uq_ci_jobs_head"),
    sa.CheckConstraint(
        "state IN ('selected', 'awaiting_approval', 'queued', 'running', 'passed', 'failed',"
        " 'timed_out', 'canceled')",
        name="ck_ci_jobs_state",
    ),
    sa.CheckConstraint("side IN ('head', 'base')", name="ck_ci_jobs_side"),
)
sa.Index("ix_ci_jobs_build", ci_jobs.c.engine, ci_jobs.c.build_id)
sa.Index("ix_ci_jobs_dispatch_key", ci_jobs.c.dispatch_key)
# A base run is reused by later PRs on the same merge base.
sa.Index("ix_ci_jobs_commit", ci_jobs.c.repo, ci_jobs.c.name, ci_jobs.c.commit_sha)

# A maintainer's approval of one head SHA for GPU jobs. A push makes a new head: no row.
ci_approvals = sa.Table(
    "ci_approvals",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("head_sha", sa.String(64), primary_key=True),
    sa.Column("approver", sa.String(200), primary_key=True),
    sa.Column("source", sa.String(200), nullable=False),  # "comment 123" or "label ok-to-test"
    sa.Column("created_at", UTCDateTime(), nullable=False),
)

# The full report of a PR head (every section with its template data) as the pipeline made
# it, so results arriving later re-render the comment without running the checks again.
ci_reports = sa.Table(
    "ci_reports",
    metadata,
    sa.Column("repo", sa.String(300), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("head_sha", sa.String(64), primary_key=True),
    sa.Column("context", Json, nullable=False),  # installation, html_base, branch, trust
    sa.Column("report", Json, nullable=False),
    # When prbot first had a report for this head: an approval typed before it cannot have
    # been meant for this head (a push came after the comment).
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
)
