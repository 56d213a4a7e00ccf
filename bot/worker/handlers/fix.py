"""Autofix: ``/prbot fix [docs|requirements]`` and the check run's "Apply fix" button.

Both queue a ``fix`` job; the job reads the stored report, asks GitHub for the PR as it is
now, and either pushes one commit with exactly the report's patches (bot/fixes/push.py) or
posts them as a suggestion saying why it did not push (bot/fixes/plan.py decides).

The push is an effect recorded per PR head (``fix_push:repo#n@head``), built so that a job
run again after a crash rebuilds the same commit: a replayed command or a redelivered button
press never pushes twice, and a push that happened before the record was written is found.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from bot.events.permissions import effective_level
from bot.fixes.plan import (
    FIX_ACTION,
    FilePatch,
    commit_message,
    decide,
    fixes_in,
    nothing_text,
    parse_kinds,
    pushed_text,
    refused_text,
    suggestion_text,
)
from bot.fixes.push import PushRefused, build_commit, push, same_host
from bot.github.app import CHECK_RUN_NAME, InstallationClient
from bot.local.mirror import RepoMirror, StaleHead
from bot.runtime.locks import named_lock
from bot.store import state
from bot.worker.handlers.context import HandlerContext, html_base, ours, pulls_for_head
from bot.worker.handlers.registry import CommandCall, Event, on_command, on_event, on_job

log = logging.getLogger(__name__)


def enqueue_fix(
    ctx: HandlerContext,
    payload: dict[str, Any],
    *,
    number: int,
    requester: str,
    kinds: tuple[str, ...],
    head_sha: str | None,
    request: str,
) -> int:
    """A ``fix`` job for one request (a comment, a button press); one job per request."""
    repository = payload["repository"]
    job = {
        "repo": repository["full_name"],
        "clone_url": repository.get("clone_url"),
        "default_branch": repository.get("default_branch"),
        "html_base": html_base(repository),
        "installation_id": (payload.get("installation") or {}).get("id"),
        "number": number,
        "requester": requester,
        "kinds": list(kinds),
        "head_sha": head_sha,
        "request": request,
    }
    key = f"fix:{repository['full_name']}#{number}:{request}"
    return ctx.queue.enqueue("fix", job, dedupe_key=key)


AUTOFIX_OFF = (
    "autofix is off here (features.autofix in the rules), so prbot pushes nothing; "
    "the report's patch can be applied by hand"
)


@on_command("fix")
def fix_command(ctx: HandlerContext, call: CommandCall) -> None:
    kinds, problem = parse_kinds(call.argument)
    request = f"comment-{call.comment['id']}"
    if "autofix" not in call.ruleset.features.on():
        problem = AUTOFIX_OFF
    if problem is not None:
        key = f"fix_reply:{call.repo}#{call.number}:{request}"
        ctx.reply_once(
            call.client, key, call.repo, call.number, refused_text(call.commenter, problem)
        )
        return
    if call.client is not None and not ctx.dry_run:
        call.client.add_reaction(call.repo, call.comment["id"], "eyes")
    enqueue_fix(
        ctx,
        call.payload,
        number=call.number,
        requester=call.commenter,
        kinds=kinds,
        head_sha=None,  # the latest report's
        request=request,
    )


@on_event("check_run", "requested_action")
def on_fix_button(ctx: HandlerContext, event: Event) -> None:
    payload = event.payload
    run = payload["check_run"]
    identifier = (payload.get("requested_action") or {}).get("identifier")
    if identifier != FIX_ACTION["identifier"] or run.get("name") != CHECK_RUN_NAME:
        return
    if not ours(ctx, run.get("app")):
        return
    if "autofix" not in ctx.rules_for(payload["repository"]).features.on():
        return  # no button is offered then; a stale one pushes nothing
    requester = (payload.get("sender") or {}).get("login") or ""
    repo = payload["repository"]["full_name"]
    for number in pulls_for_head(ctx, repo, run["head_sha"], run.get("pull_requests") or []):
        enqueue_fix(
            ctx,
            payload,
            number=number,
            requester=requester,
            kinds=("docs", "requirements"),
            head_sha=run["head_sha"],  # the button belongs to that head's report
            request=f"delivery-{event.delivery_id}",
        )


@on_job("fix")
def run_fix(ctx: HandlerContext, job: dict[str, Any]) -> None:
    client = ctx.client(job.get("installation_id"))
    if client is None:
        log.info(
            "fix for %s#%s: no GitHub access (dry run); nothing done", job["repo"], job["number"]
        )
        return
    FixJob(ctx, client, job).run()


class FixJob:
    def __init__(
        self, ctx: HandlerContext, client: InstallationClient, job: dict[str, Any]
    ) -> None:
        self.ctx = ctx
        self.client = client
        self.job = job
        self.repo: str = job["repo"]
        self.number: int = job["number"]
        self.requester: str = job["requester"]
        self.reply_key = f"fix_reply:{self.repo}#{self.number}:{job['request']}"

    def reply(self, text: str) -> None:
        self.ctx.reply_once(self.client, self.reply_key, self.repo, self.number, text)

    def run(self) -> None:
        kinds = tuple(self.job.get("kinds") or ("docs", "requirements"))
        stored = state.latest_report(
            self.ctx.engine, self.repo, self.number, self.job.get("head_sha")
        )
        if stored is None:
            self.reply(nothing_text(self.requester, kinds, self.job.get("head_sha")))
            return
        fix_head: str = stored["head_sha"]
        patches = fixes_in(stored["report"], kinds)
        if not patches:
            self.reply(nothing_text(self.requester, kinds, fix_head))
            return
        pull = self.client.get_pull(self.repo, self.number).payload
        push_key = f"fix_push:{self.repo}#{self.number}@{fix_head}"
        with named_lock(self.ctx.engine, push_key, self.ctx.settings.data_dir / "locks"):
            self._run_locked(pull, fix_head, patches, push_key)

    def _run_locked(
        self, pull: dict[str, Any], fix_head: str, patches: list[FilePatch], push_key: str
    ) -> None:
        effect = state.get_effect(self.ctx.engine, push_key)
        if effect is not None and effect.state == "done" and effect.external_id:
            self.reply(pushed_text(self.requester, effect.external_id, patches))
            return  # pushed already (a replay, or a second request for the same head)
        try:
            sha = self._push_unless_done(pull, fix_head, patches, push_key, effect)
        except (PushRefused, StaleHead) as exc:
            state.forget_effect(self.ctx.engine, push_key)
            self.reply(suggestion_text(self.requester, str(exc), patches))
            return
        if sha is not None:
            self.reply(pushed_text(self.requester, sha, patches))

    def _push_unless_done(
        self,
        pull: dict[str, Any],
        fix_head: str,
        patches: list[FilePatch],
        push_key: str,
        effect: state.Effect | None,
    ) -> str | None:
        """The pushed commit's SHA; None when prbot declined (and said why)."""
        head_now = (pull.get("head") or {}).get("sha")
        if effect is not None and head_now != fix_head:
            # A push that may have happened before its record: the same commit, rebuilt.
            sha = self._build(pull, fix_head, patches, effect.updated_at)
            if sha == head_now:
                state.finish_effect(self.ctx.engine, push_key, sha, fix_head)
                return sha
        level = effective_level(*self.client.permission(self.repo, self.requester))
        decision = decide(pull, fix_head, requester_level=level, dry_run=self.ctx.dry_run)
        if not decision.push:
            self.reply(suggestion_text(self.requester, decision.reason, patches))
            return None
        head = pull["head"]
        push_url = (head.get("repo") or {}).get("clone_url") or ""
        if not same_host(push_url, self.job.get("clone_url") or ""):
            raise PushRefused("the PR's branch is not on the host the repository is on")
        effect = state.begin_effect(self.ctx.engine, push_key, fix_head)
        sha = self._build(pull, fix_head, patches, effect.updated_at)
        push(self._mirror().path, push_url, self.client.token(), sha, head["ref"])
        state.finish_effect(self.ctx.engine, push_key, sha, fix_head)
        log.info("%s#%s: pushed fix %s onto %s", self.repo, self.number, sha[:12], fix_head[:12])
        return sha

    def _mirror(self) -> RepoMirror:
        return RepoMirror(self.ctx.settings.data_dir, self.repo, self.job.get("clone_url") or "")

    def _build(
        self, pull: dict[str, Any], fix_head: str, patches: list[FilePatch], when: datetime
    ) -> str:
        """The fix commit (deterministic: its dates are the push record's)."""
        mirror = self._mirror()
        base = pull["base"]
        mirror.fetch_pull(self.client.token(), self.number, base["ref"], base["sha"], fix_head)
        login = self.ctx.app.bot_login() if self.ctx.app is not None else "prbot[bot]"
        stamp = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        return build_commit(
            mirror.path,
            fix_head,
            patches,
            commit_message(patches, fix_head, self.requester),
            author=(login, f"{login}@users.noreply.github.com"),
            timestamp=int(stamp.timestamp()),
        )
