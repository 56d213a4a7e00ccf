"""``issue_comment``: commands typed on a PR, parsed, permission-checked, then handed on.

Each command's effect lives in its own handler (``@on_command``, e.g.
bot/worker/handlers/recheck.py);
this module only decides whether a comment holds commands, who may run them, and answers
``/prbot help`` and near-misses.
"""

from __future__ import annotations

from typing import Any

from bot.core.markdown import code_span
from bot.events.commands import Command, parse_commands, reply_text
from bot.events.permissions import (
    command_allowed,
    effective_level,
    may_approve,
    needs_permission_lookup,
)
from bot.github.app import InstallationClient
from bot.store import state
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import CommandCall, Event, command_handler, on_event

# Commands that are answered here rather than run.
REPLY_ONLY = {"help"}
APPROVE_COMMAND = "approve_gpu"


def _from_a_bot(comment: dict[str, Any]) -> bool:
    # Our own comments (and other bots') are never commands.
    user = comment.get("user") or {}
    return user.get("type") == "Bot" or comment.get("performed_via_github_app") is not None


@on_event("issue_comment", "created")
def on_issue_comment(ctx: HandlerContext, event: Event) -> None:
    payload = event.payload
    issue = payload.get("issue") or {}
    comment = payload.get("comment") or {}
    if not issue.get("pull_request") or _from_a_bot(comment):
        return  # a comment on a plain issue, or a bot's
    if not parse_commands(comment.get("body")):
        return  # no line that could be a command: no rules read, no call made
    commenter = (comment.get("user") or {}).get("login", "")
    repo = payload["repository"]["full_name"]
    number = issue["number"]
    ruleset = ctx.rules_for(payload["repository"])
    if commenter in set(ruleset.trust.bots):
        return
    spellings = ruleset.commands.spellings()
    commands = parse_commands(comment.get("body"), spellings)
    runnable = _first_of_each(
        [c for c in commands if c.known and c.name not in REPLY_ONLY and command_handler(c.name)]
    )
    help_wanted = any(c.known and c.name == "help" for c in commands)
    misses = [c for c in commands if c.needs_reply]
    if not (runnable or help_wanted or misses):
        return  # another bot's command (/assign, /cc): not ours to answer
    client = ctx.client_for(payload)
    pr_author = (issue.get("user") or {}).get("login")
    # In the rules' order (recheck before help), which is the order help lists them in.
    names = list(dict.fromkeys(spellings.values()))
    policies = {name: getattr(ruleset.commands, name).allow for name in names}
    level = None
    if any(
        needs_permission_lookup(allow, commenter=commenter, pr_author=pr_author)
        for allow in policies.values()
    ):
        level = "none"
        if client is not None:
            level = effective_level(*client.permission(repo, commenter))

    approval = ruleset.checks.jobs.approval

    def allowed(name: str) -> bool:
        if command_allowed(policies[name], commenter=commenter, pr_author=pr_author, level=level):
            return True
        # The approval command is also the trusted users' and, where the rules delegate to
        # authors (vLLM), the author's: its handler checks the rest (draft, label, review).
        delegated = approval.delegates and pr_author and commenter.lower() == pr_author.lower()
        return name == APPROVE_COMMAND and bool(
            may_approve(commenter, level, approval.trusted_users) or delegated
        )

    if help_wanted or misses:
        usable = [name for name in names if allowed(name)]
        text = reply_text(
            commenter, usable=usable, spellings=spellings, help_wanted=help_wanted, misses=misses
        )
        ctx.reply_once(client, f"command_reply:{repo}#{comment.get('id')}", repo, number, text)
    for command in runnable:
        if not allowed(command.name):
            who = who_may(policies[command.name])
            _reply_unauthorized(ctx, client, repo, number, commenter, command, who)
            continue
        call = CommandCall(command, repo, number, commenter, comment, payload, client, ruleset)
        command_handler(command.name)(ctx, call)  # type: ignore[misc]


def who_may(allow: list[str]) -> str:
    """A command's ``allow`` policy in words: "the PR author and people with write access"."""
    order = ("read", "triage", "write", "maintain", "admin")
    levels = [level for level in order if level in allow]
    parts = ["the PR author"] if "author" in allow else []
    if levels:
        parts.append(f"people with {levels[0]} access")
    return " and ".join(parts) or "nobody"


def _first_of_each(commands: list[Command]) -> list[Command]:
    # One run however many times a command is typed in one comment.
    seen: dict[str, Command] = {}
    for command in commands:
        seen.setdefault(command.name, command)
    return list(seen.values())


def _reply_unauthorized(
    ctx: HandlerContext,
    client: InstallationClient | None,
    repo: str,
    number: int,
    commenter: str,
    command: Command,
    who: str = "the PR author and people with write access",
) -> None:
    head = state.current_head(ctx.engine, repo, number) or "unknown"
    # The command as the commenter typed it, never prbot's internal name for it.
    text = f"@{commenter} only {who} can run {code_span(command.as_typed)} here."
    # Once per head and command, however often it is retried.
    key = f"unauthorized_reply:{repo}#{number}@{head}"
    if command.name != "recheck":
        key = f"unauthorized_reply:{command.name}:{repo}#{number}@{head}"
    ctx.reply_once(client, key, repo, number, text)
