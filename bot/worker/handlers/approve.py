"""A maintainer's approval of GPU jobs for a PR's current head SHA, by command or label.

``/approve-gpu`` (``commands.approve_gpu``; never another bot's ``/ci run``) passes the command
parser and the permission check first (bot/worker/handlers/issue_comment.py: only new comments,
never quotes, code or edits). A label in ``checks.jobs.approval_labels`` approves when the
person who added it has write access. Either way the approval is of the head GitHub has
*now*: a push afterwards makes a head nobody approved.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from github import GithubException

from bot.events.permissions import author_may_run, effective_level, may_approve, reviews_of_head
from bot.github.pulls import parse_time
from bot.jobs.config import ApprovalRules
from bot.store import jobs as store
from bot.worker.ci.flow import queue_dispatch
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import CommandCall, Event, on_command, on_event

log = logging.getLogger(__name__)

# Reviewers whose permission is looked up to find a trusted approval; more is not a review.
MAX_REVIEWERS_CHECKED = 10
# Reviews read (GitHub lists them oldest first). A PR with more is not judged: its newest
# reviews, a request for changes among them, would be unread, and its author can post
# commented reviews of their own PR until they are.
MAX_REVIEWS_READ = 300


def _trusted_review(call: CommandCall, approval: ApprovalRules, head_sha: str) -> str:
    """Whether a trusted reviewer approved this head: ``head`` when one's latest review
    approves ``head_sha`` and none's asks for changes (and, where the rules say so, GitHub's
    reviewDecision is APPROVED, as vLLM's has_trusted_approval asks first); ``earlier`` when
    the only trusted approvals are of earlier commits; ``unread`` when GitHub would not say
    the reviewDecision; ``cut`` when the PR has more reviews than are read; ``none``
    otherwise."""
    client = call.client
    assert client is not None
    if approval.review_decision:
        try:
            decision = client.review_decision(call.repo, call.number)
        except GithubException as exc:
            log.info("%s#%s: reviewDecision not read (%s)", call.repo, call.number, exc.status)
            return "unread"
        if decision != "APPROVED":
            return "none"
    reviews = client.pull_reviews(call.repo, call.number, limit=MAX_REVIEWS_READ + 1)
    if len(reviews) > MAX_REVIEWS_READ:
        return "cut"
    # Requests for changes are looked at first, and one left unchecked past the bound blocks
    # as a trusted one would: otherwise reviewers ahead of it in the list hid it.
    latest = sorted(
        reviews_of_head(reviews, head_sha).values(), key=lambda r: r[1] != "CHANGES_REQUESTED"
    )
    if any(what == "CHANGES_REQUESTED" for _, what in latest[MAX_REVIEWERS_CHECKED:]):
        return "none"
    found = set()
    for login, what in latest[:MAX_REVIEWERS_CHECKED]:
        if login.lower() == call.commenter.lower():
            continue  # the author's own review approves nothing
        level = effective_level(*client.permission(call.repo, login))
        if may_approve(login, level, approval.trusted_users):
            found.add(what)
    if "CHANGES_REQUESTED" in found:
        return "none"
    return "head" if "approved" in found else "earlier" if "approved_earlier" in found else "none"


def _approve(
    ctx: HandlerContext,
    payload: dict[str, Any],
    number: int,
    head_sha: str,
    approver: str,
    source: str,
    *,
    again: bool = False,
) -> None:
    repo = payload["repository"]["full_name"]
    new = store.approve(ctx.engine, repo, number, head_sha, approver, source)
    log.info("%s#%s@%s approved by %s (%s)", repo, number, head_sha[:12], approver, source)
    if not (new or again):
        return  # the same label again: nothing new to dispatch
    queue_dispatch(
        ctx.queue,
        {
            "repo": repo,
            "number": number,
            "head_sha": head_sha,
            "installation_id": (payload.get("installation") or {}).get("id"),
            "mode": "approval",
        },
    )


def _before(kept: datetime | None, said_at: str | None) -> bool:
    """Whether prbot had this head's report before the comment was written."""
    if kept is None or not said_at:
        return False
    try:
        # GitHub's timestamps are whole seconds: a report kept in the comment's second counts.
        return kept < parse_time(said_at) + timedelta(seconds=1)
    except ValueError:
        return False


@on_command("approve_gpu")
def approve_by_command(ctx: HandlerContext, call: CommandCall) -> None:
    if call.payload.get("action") != "created":
        return  # an edited comment approves nothing (it may have been edited after a push)
    if call.client is None:
        log.info("approval on %s#%s without GitHub access; not recorded", call.repo, call.number)
        return
    pull = call.client.get_pull(call.repo, call.number)
    if pull.state != "open":
        return
    approval = call.ruleset.checks.jobs.approval
    level = effective_level(*call.client.permission(call.repo, call.commenter))
    why = "approver"
    if not may_approve(call.commenter, level, approval.trusted_users):
        # Let through as the PR's author (the rules delegate to authors): vLLM's rule.
        labels = [
            str(label.get("name"))
            for label in pull.payload.get("labels") or []
            if isinstance(label, dict)
        ]
        needs_review = approval.author_after_review and not set(labels) & set(
            approval.author_labels
        )
        reviewed = _trusted_review(call, approval, pull.head_sha) if needs_review else "none"
        allowed, why = author_may_run(
            draft=bool(pull.payload.get("draft")),
            labels=labels,
            trusted_review=reviewed == "head",
            author_labels=approval.author_labels,
            after_review=approval.author_after_review,
            on_drafts=approval.author_on_drafts,
        )
        if not allowed and reviewed == "earlier":
            # A review approves the code it saw: a push since then needs a new one.
            why += f" (the approval is of an earlier commit, not of `{pull.head_sha[:12]}`)"
        elif not allowed and reviewed == "unread":
            why += " (GitHub did not answer with the PR's reviewDecision; try again later)"
        elif not allowed and reviewed == "cut":
            why += f" (the PR has over {MAX_REVIEWS_READ} reviews, so prbot does not judge them)"
        if call.commenter.lower() != pull.author.lower() or not allowed:
            text = f"@{call.commenter} {why}; `{call.command.as_typed}` approved nothing."
            key = f"approve_refused:{call.repo}#{call.number}@{call.comment.get('id')}"
            ctx.reply_once(call.client, key, call.repo, call.number, text)
            return
    # The comment carries no SHA. It approves the head GitHub has now only when prbot had
    # that head's report before the comment was written: a push in between (the author's,
    # racing the maintainer) makes a head the approver never saw.
    kept = store.report_first_kept(ctx.engine, call.repo, call.number, pull.head_sha)
    if not _before(kept, call.comment.get("created_at")):
        text = (
            f"@{call.commenter} the head moved to `{pull.head_sha[:12]}` after (or while) "
            "you approved; GPU jobs need an approval of that head, once its report is up."
        )
        key = f"approve_moved:{call.repo}#{call.number}@{call.comment.get('id')}"
        ctx.reply_once(call.client, key, call.repo, call.number, text)
        return
    source = f"comment {call.comment['id']}" + ("" if why == "approver" else f" ({why})")
    # A new comment approving again re-runs what failed (a redelivery of the same comment is
    # stopped at the intake by its delivery id, and re-running finished jobs needs a failure).
    _approve(ctx, call.payload, call.number, pull.head_sha, call.commenter, source, again=True)
    if not ctx.dry_run:
        call.client.add_reaction(call.repo, call.comment["id"], "+1")


@on_event("pull_request", "labeled")
def approve_by_label(ctx: HandlerContext, event: Event) -> None:
    payload = event.payload
    label = (payload.get("label") or {}).get("name")
    sender = (payload.get("sender") or {}).get("login")
    pull = payload.get("pull_request") or {}
    if not label or not sender or pull.get("state") != "open":
        return
    ruleset = ctx.rules_for(payload["repository"])
    if label not in ruleset.checks.jobs.approval_labels:
        return
    client = ctx.client_for(payload)
    if client is None:
        return
    repo = payload["repository"]["full_name"]
    number = pull["number"]
    level = effective_level(*client.permission(repo, sender))
    if not may_approve(sender, level, ruleset.checks.jobs.approval.trusted_users):
        log.info("%s#%s: label %s added by %s, who may not approve", repo, number, label, sender)
        return
    # The label approves the head it was added on (the payload's), and only while it is
    # still the head: a push since then is a head nobody approved.
    labeled_head = (pull.get("head") or {}).get("sha")
    if not labeled_head or client.get_pull(repo, number).head_sha != labeled_head:
        log.info("%s#%s: label %s on a head that has moved; not an approval", repo, number, label)
        return
    _approve(ctx, payload, number, labeled_head, sender, f"label {label}")
