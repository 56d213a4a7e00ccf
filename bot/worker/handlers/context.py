"""What every handler gets: the service's parts, and the few effects handlers share.

A handler reaches GitHub, the queue and the mirror only through this object, so a test can
hand in a real database, a real queue and an App pointed at the local GitHub test server.
"""

from __future__ import annotations

import logging
from functools import cached_property
from typing import Any

from sqlalchemy import Engine

from bot.github.app import GitHubApp, InstallationClient
from bot.local.mirror import RepoMirror
from bot.local.sandbox import SandboxRunner
from bot.report import rules as rules_module
from bot.report.runner import load_rules
from bot.runtime.locks import named_lock
from bot.runtime.settings import Settings
from bot.store import state
from bot.store.queue import Queue

log = logging.getLogger(__name__)


def html_base(repository: dict[str, Any]) -> str:
    """``https://github.com`` (or the GHES host) for links, from the repository payload."""
    html_url = repository.get("html_url") or ""
    full_name = repository.get("full_name") or ""
    if full_name and html_url.endswith(full_name):
        return html_url[: -len(full_name) - 1]
    return "https://github.com"


class HandlerContext:
    def __init__(
        self, settings: Settings, engine: Engine, queue: Queue, app: GitHubApp | None
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.queue = queue
        self.app = app

    @cached_property
    def sandbox(self) -> SandboxRunner:
        """Runs generators and uv for the checks, as the sandbox user when one is set."""
        return SandboxRunner(
            user=self.settings.sandbox_user, secret_paths=self.settings.sandbox_secret_paths
        )

    @property
    def dry_run(self) -> bool:
        return self.settings.dry_run

    def client(self, installation_id: Any) -> InstallationClient | None:
        """The installation's API client, or None without an App (dry-run, tests)."""
        if self.app is None or not isinstance(installation_id, int):
            return None
        return self.app.installation(installation_id)

    def client_for(self, payload: dict[str, Any]) -> InstallationClient | None:
        return self.client((payload.get("installation") or {}).get("id"))

    def mirror(self, repository: dict[str, Any]) -> RepoMirror:
        return RepoMirror(
            self.settings.data_dir, repository["full_name"], repository.get("clone_url") or ""
        )

    def rules_for(self, repository: dict[str, Any]) -> Any:
        """The repository's rules as of its default branch in the mirror, else the defaults
        (a repository not fetched yet, or an invalid file: the report says so, not this)."""
        branch = repository.get("default_branch") or "main"
        data = self.mirror(repository).read_file(branch, rules_module.REPO_RULES_PATH)
        text = data.decode("utf-8", "replace") if data is not None else None
        return load_rules(text, default=self.settings.default_rules).ruleset

    # ------------------------------------------------------------------ queue
    def enqueue_pipeline(
        self,
        payload: dict[str, Any],
        pull: dict[str, Any] | None,
        *,
        reason: str,
        number: int | None = None,
        comment_id: int | None = None,
    ) -> int:
        """A run of the checks for a PR's newest head; coalesced per PR, so a burst of pushes
        runs once. ``pull`` is None for a re-run: the pipeline then asks GitHub for the head."""
        repository = payload["repository"]
        number = number if number is not None else pull["number"]  # type: ignore[index]
        job = {
            "repo": repository["full_name"],
            "clone_url": repository.get("clone_url"),
            "html_base": html_base(repository),
            "installation_id": (payload.get("installation") or {}).get("id"),
            "number": number,
            "pull": pull,
            "reason": reason,
            "comment_id": comment_id,
        }
        return self.queue.enqueue(
            "pipeline", job, dedupe_key=f"pipeline:{repository['full_name']}#{number}"
        )

    def enqueue_reconcile(
        self, repo: str, installation_id: int | None, delay_seconds: float = 0
    ) -> None:
        """List the repository's open PRs into the duplicates index (once per repository)."""
        if installation_id is None:
            return
        self.queue.enqueue(
            "reconcile",
            {"repo": repo, "installation_id": installation_id},
            dedupe_key=f"reconcile:{repo}",
            delay_seconds=delay_seconds,
        )

    # ------------------------------------------------------------------ effects
    def reply_once(
        self, client: InstallationClient | None, key: str, repo: str, number: int, text: str
    ) -> None:
        """Post ``text`` unless this reply was already posted (a redelivered comment). The
        lock makes check-and-post one step for workers handling two deliveries at once."""
        if client is None:
            return
        if self.dry_run:
            log.info("dry run: would reply on %s#%s: %s", repo, number, text)
            return
        with named_lock(self.engine, key, self.settings.data_dir / "locks"):
            if state.get_effect(self.engine, key) is not None:
                return
            state.begin_effect(self.engine, key)
            comment_id = client.create_comment(repo, number, text)
            state.finish_effect(self.engine, key, str(comment_id))


# A commit is the head of a handful of PRs at most; more is not worth a run each.
MAX_PULLS_PER_RERUN = 10


def ours(ctx: HandlerContext, app: dict[str, Any] | None) -> bool:
    """Whether a run or suite belongs to this App (other Apps' events are not ours to act on)."""
    app_id = (app or {}).get("id")
    return app_id is None or ctx.settings.app_id is None or str(app_id) == ctx.settings.app_id


def pulls_for_head(
    ctx: HandlerContext, repo: str, head_sha: str, pull_refs: list[dict[str, Any]]
) -> list[int]:
    """The PRs whose head is ``head_sha``: those the payload names, else (a fork's PR, which
    GitHub leaves out) those whose head prbot last saw there."""
    numbers = [p["number"] for p in pull_refs if (p.get("head") or {}).get("sha") == head_sha]
    if not numbers:
        numbers = state.pulls_at_head(ctx.engine, repo, head_sha)
    return list(dict.fromkeys(numbers))[:MAX_PULLS_PER_RERUN]


def still_head(ctx: HandlerContext, payload: dict[str, Any], number: int, head_sha: str) -> bool:
    """Whether ``head_sha`` is still PR ``number``'s head (asked of GitHub when it can be)."""
    repo = payload["repository"]["full_name"]
    known = state.current_head(ctx.engine, repo, number)
    if known is not None and known != head_sha:
        return False
    client = ctx.client_for(payload)
    if client is None:
        return known == head_sha
    pull = client.get_pull(repo, number)
    return pull.state == "open" and pull.head_sha == head_sha


def rerun_head(
    ctx: HandlerContext,
    payload: dict[str, Any],
    head_sha: str,
    pull_refs: list[dict[str, Any]],
    reason: str,
) -> list[int]:
    """Queue the pipeline for every PR still at ``head_sha``; returns their numbers."""
    repo = payload["repository"]["full_name"]
    queued = []
    for number in pulls_for_head(ctx, repo, head_sha, pull_refs):
        if not still_head(ctx, payload, number, head_sha):
            log.info("%s#%s: %s is no longer the head; not re-run", repo, number, head_sha[:12])
            continue
        ctx.enqueue_pipeline(payload, None, number=number, reason=reason)
        queued.append(number)
    if not queued:
        log.info("%s@%s: re-run asked, but no open PR has it as head", repo, head_sha[:12])
    return queued
