"""The queue consumer: turns stored deliveries into reports, and commands into re-runs.

Jobs:
- ``delivery``: one stored webhook. Pull-request events record the head and enqueue a
  ``pipeline`` job (coalesced per PR, so a burst of pushes runs once for the newest head);
  comments are parsed for commands; installation events are recorded.
- ``pipeline``: fetch the PR into the mirror, build the snapshot, run the checks, store the
  report and publish it (unless dry-run).
- ``reconcile``: list a repository's open PRs into the duplicates index (ETag-conditional),
  on installation, the first time a repository is seen, and every few hours after.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from bot import rules as rules_module
from bot.commands import parse_commands, reply_text
from bot.config import Settings
from bot.duplicates.reconcile import reconcile
from bot.duplicates.store import needs_reconcile
from bot.github_app import GitHubApp, InstallationClient
from bot.gitrepo import GitError, run_git
from bot.locks import named_lock
from bot.logs import delivery_fields, job_fields, log_fields
from bot.metrics import JOB_LATENCY
from bot.mirror import RepoMirror
from bot.permissions import command_allowed, effective_level, needs_permission_lookup
from bot.pipeline import Pipeline, parse_time, pull_summary
from bot.store import deliveries, state
from bot.store.queue import Job, Queue

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL = 3600.0
# A periodic reconcile catches PRs whose events were missed (downtime, lost deliveries).
RECONCILE_INTERVAL = 6 * 3600.0
DONE_JOB_RETENTION = 7 * 86400.0
# GitHub lets a delivery be redelivered for a few days; remembering GUIDs longer keeps
# a late redelivery from being processed twice.
DELIVERY_RETENTION = 30 * 86400.0

PIPELINE_ACTIONS = {"opened", "synchronize", "reopened", "edited", "ready_for_review"}


def _html_base(repository: dict[str, Any]) -> str:
    html_url = repository.get("html_url") or ""
    full_name = repository.get("full_name") or ""
    return (
        html_url[: -len(full_name) - 1]
        if full_name and html_url.endswith(full_name)
        else ("https://github.com")
    )


class Worker:
    def __init__(
        self, settings: Settings, engine: Engine, queue: Queue, app: GitHubApp | None
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.queue = queue
        self.app = app
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
        self.pipeline = Pipeline(settings, engine, app)

    # ---------------------------------------------------------------- loop
    def run_forever(self, stop: threading.Event) -> None:
        next_housekeeping = 0.0
        while not stop.is_set():
            if time.monotonic() >= next_housekeeping:
                self.housekeeping()
                next_housekeeping = time.monotonic() + HOUSEKEEPING_INTERVAL
            try:
                worked = self.run_once()
            except Exception:  # noqa: BLE001 - the loop must survive anything
                log.exception("worker loop error")
                worked = False
            if not worked:
                stop.wait(self.settings.poll_seconds)

    def housekeeping(self) -> None:
        """Drop finished jobs and old deliveries; keep deliveries past GitHub's redelivery."""
        try:
            self.queue.purge_done(DONE_JOB_RETENTION)
            deliveries.purge_deliveries(self.engine, DELIVERY_RETENTION)
        except Exception:  # noqa: BLE001 - housekeeping must never stop the worker
            log.exception("housekeeping failed")

    def run_once(self) -> bool:
        job = self.queue.lease(self.worker_id)
        if job is None:
            return False
        started = time.monotonic()
        stop_heartbeat = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job, stop_heartbeat), daemon=True)
        beat.start()
        try:
            with log_fields(**job_fields(job.id, job.kind, job.payload)):
                self.handle(job)
        except Exception as exc:  # noqa: BLE001 - recorded on the job, retried with backoff
            stop_heartbeat.set()
            outcome = self.queue.fail(job, f"{type(exc).__name__}: {exc}")
            log.error(
                "job %s (%s) failed, %s:\n%s",
                job.id,
                job.kind,
                outcome,
                traceback.format_exc(),
                extra=job_fields(job.id, job.kind, job.payload),
            )
            JOB_LATENCY.labels(job.kind, outcome).observe(self._age(job))
        else:
            stop_heartbeat.set()
            self.queue.complete(job)
            JOB_LATENCY.labels(job.kind, "done").observe(self._age(job))
            log.info(
                "job %s (%s) done in %.2fs",
                job.id,
                job.kind,
                time.monotonic() - started,
                extra=job_fields(job.id, job.kind, job.payload),
            )
        return True

    @staticmethod
    def _age(job: Job) -> float:
        created = job.created_at if job.created_at.tzinfo else job.created_at.replace(tzinfo=UTC)
        return max((datetime.now(UTC) - created).total_seconds(), 0.0)

    def _heartbeat(self, job: Job, stop: threading.Event) -> None:
        interval = max(self.settings.lease_seconds / 3, 0.2)
        while not stop.wait(interval):
            if not self.queue.heartbeat(job):
                return

    # ---------------------------------------------------------------- dispatch
    def handle(self, job: Job) -> None:
        if job.kind == "delivery":
            self.handle_delivery(job.payload["delivery_id"])
        elif job.kind == "pipeline":
            self.pipeline.run(job.payload)
        elif job.kind == "reconcile":
            self.reconcile_open_prs(job.payload)
        else:
            raise ValueError(f"unknown job kind {job.kind!r}")

    def handle_delivery(self, delivery_id: int) -> None:
        delivery = deliveries.get_delivery(self.engine, delivery_id)
        if delivery is None:
            raise LookupError(f"delivery {delivery_id} is missing")
        payload = json.loads(delivery.body)
        with log_fields(**delivery_fields(delivery.repo, payload)):
            log.info("delivery %s: %s %s", delivery.guid, delivery.event, delivery.action or "")
            self._dispatch_delivery(delivery, payload)

    def _dispatch_delivery(self, delivery: deliveries.Delivery, payload: dict[str, Any]) -> None:
        if delivery.event == "pull_request":
            self.on_pull_request(delivery.action or "", payload)
        elif delivery.event == "issue_comment":
            self.on_issue_comment(payload)
        elif delivery.event in ("installation", "installation_repositories"):
            self.on_installation(delivery.action or "", payload)

    def on_installation(self, action: str, payload: dict[str, Any]) -> None:
        installation = payload.get("installation") or {}
        if not isinstance(installation.get("id"), int):
            log.warning("installation event without an installation id; ignored")
            return
        repos = [
            r.get("full_name")
            for r in payload.get("repositories") or payload.get("repositories_added") or []
            if r.get("full_name")
        ]
        state.record_installation(
            self.engine,
            installation.get("id"),
            ((installation.get("account") or {}).get("login") or ""),
            repos or None,
            deleted=action == "deleted",
        )
        if action in ("created", "added", "unsuspend"):
            for repo in repos:
                self.enqueue_reconcile(repo, installation["id"])

    # ---------------------------------------------------------------- open-PR index
    def enqueue_reconcile(
        self, repo: str, installation_id: int | None, delay_seconds: float = 0
    ) -> None:
        if installation_id is None:
            return
        self.queue.enqueue(
            "reconcile",
            {"repo": repo, "installation_id": installation_id},
            dedupe_key=f"reconcile:{repo}",
            delay_seconds=delay_seconds,
        )

    def reconcile_open_prs(self, job: dict[str, Any]) -> None:
        """List the repository's open PRs (a conditional request: 304 when nothing moved)
        and fetch what the index lacks; then come back later to catch missed events."""
        if self.app is None:
            return
        client = self.app.installation(int(job["installation_id"]))
        stats = reconcile(self.engine, client.gh, job["repo"])
        log.info("reconciled %s: %s", job["repo"], stats)
        self.enqueue_reconcile(job["repo"], job["installation_id"], RECONCILE_INTERVAL)

    def on_pull_request(self, action: str, payload: dict[str, Any]) -> None:
        pull = payload["pull_request"]
        repo = payload["repository"]["full_name"]
        state.observe_head(
            self.engine,
            repo,
            pull["number"],
            pull["head"]["sha"],
            parse_time(pull.get("updated_at")),
        )
        self.pipeline.update_open_pr_index(payload, None)
        if needs_reconcile(self.engine, repo):
            # Events only know the PRs they saw; list the rest once, before this PR's run.
            self.enqueue_reconcile(repo, (payload.get("installation") or {}).get("id"))
        if action not in PIPELINE_ACTIONS or pull.get("state") != "open":
            return
        self.enqueue_pipeline(payload, pull_summary(pull), reason=f"pull_request.{action}")

    def enqueue_pipeline(
        self,
        payload: dict[str, Any],
        pull: dict[str, Any] | None,
        *,
        reason: str,
        number: int | None = None,
        comment_id: int | None = None,
    ) -> int:
        repository = payload["repository"]
        number = number if number is not None else pull["number"]  # type: ignore[index]
        job = {
            "repo": repository["full_name"],
            "clone_url": repository.get("clone_url"),
            "html_base": _html_base(repository),
            "installation_id": (payload.get("installation") or {}).get("id"),
            "number": number,
            "pull": pull,
            "reason": reason,
            "comment_id": comment_id,
            "raw_pull_event": payload if pull is not None else None,
        }
        return self.queue.enqueue(
            "pipeline", job, dedupe_key=f"pipeline:{repository['full_name']}#{number}"
        )

    # ---------------------------------------------------------------- commands
    def on_issue_comment(self, payload: dict[str, Any]) -> None:
        issue = payload.get("issue") or {}
        comment = payload.get("comment") or {}
        if not issue.get("pull_request"):
            return  # a comment on a plain issue
        commenter = (comment.get("user") or {}).get("login", "")
        if (comment.get("user") or {}).get("type") == "Bot" or (
            comment.get("performed_via_github_app") is not None
        ):
            return  # our own comments (and other bots') are never commands
        if not parse_commands(comment.get("body")):
            return  # no line that could be a command: no rules read, no call made
        repo = payload["repository"]["full_name"]
        number = issue["number"]
        client = self._client(payload)
        ruleset = self._rules_for_commands(payload)
        if commenter in set(ruleset.trust.bots):
            return
        spellings = ruleset.commands.spellings()
        commands = parse_commands(comment.get("body"), spellings)
        rechecks = [c for c in commands if c.known and c.name == "recheck"]
        help_wanted = any(c.known and c.name == "help" for c in commands)
        misses = [c for c in commands if c.needs_reply]
        if not (rechecks or help_wanted or misses):
            return  # another bot's command (/assign, /cc): not ours to answer
        pr_author = (issue.get("user") or {}).get("login")
        policies = {name: getattr(ruleset.commands, name).allow for name in set(spellings.values())}
        level = None
        if any(
            needs_permission_lookup(allow, commenter=commenter, pr_author=pr_author)
            for allow in policies.values()
        ):
            level = "none"
            if client is not None:
                level = effective_level(*client.permission(repo, commenter))

        def allowed(name: str) -> bool:
            return command_allowed(
                policies[name], commenter=commenter, pr_author=pr_author, level=level
            )

        if help_wanted or misses:
            usable = [name for name in ("recheck", "help") if name in policies and allowed(name)]
            text = reply_text(
                commenter,
                usable=usable,
                spellings=spellings,
                help_wanted=help_wanted,
                misses=misses,
            )
            self._reply_once(
                client, f"command_reply:{repo}#{comment.get('id')}", repo, number, text
            )
        if not rechecks:
            return
        if not allowed("recheck"):
            self._reply_unauthorized(client, payload, repo, number, commenter)
            return
        # One run however many times it is typed.
        if client is not None and not self.settings.dry_run:
            client.add_reaction(repo, comment["id"], "eyes")
        self.enqueue_pipeline(
            payload,
            None,
            number=number,
            comment_id=comment.get("id"),
            reason=f"/recheck {rechecks[0].argument}".strip(),
        )

    def _reply_once(
        self, client: InstallationClient | None, key: str, repo: str, number: int, text: str
    ) -> None:
        """Post ``text`` unless this reply was already posted (a redelivered comment). The
        lock makes check-and-post one step for workers handling two deliveries at once."""
        if client is None:
            return
        if self.settings.dry_run:
            log.info("dry run: would reply on %s#%s: %s", repo, number, text)
            return
        with named_lock(self.engine, key, self.settings.data_dir / "locks"):
            if state.get_effect(self.engine, key) is not None:
                return
            state.begin_effect(self.engine, key)
            comment_id = client.create_comment(repo, number, text)
            state.finish_effect(self.engine, key, str(comment_id))

    def _reply_unauthorized(
        self,
        client: InstallationClient | None,
        payload: dict[str, Any],
        repo: str,
        number: int,
        commenter: str,
    ) -> None:
        head = state.current_head(self.engine, repo, number) or "unknown"
        text = (
            f"@{commenter} only the PR author and people with write access can run `/recheck` here."
        )
        self._reply_once(client, f"unauthorized_reply:{repo}#{number}@{head}", repo, number, text)

    def _rules_for_commands(self, payload: dict[str, Any]) -> Any:
        """The repository's rules as of its default branch in the mirror, else the defaults."""
        repository = payload["repository"]
        mirror = RepoMirror(
            self.settings.data_dir, repository["full_name"], repository.get("clone_url") or ""
        )
        branch = repository.get("default_branch") or "main"
        text = None
        if (mirror.path / "HEAD").exists():
            try:
                text = run_git(
                    mirror.path,
                    ["show", f"refs/prbot/heads/{branch}:{rules_module.REPO_RULES_PATH}"],
                ).decode("utf-8", "replace")
            except GitError:
                text = None
        try:
            return rules_module.for_repository(text, default=self.settings.default_rules)
        except rules_module.RulesError:
            return rules_module.load_builtin(self.settings.default_rules)

    def _client(self, payload: dict[str, Any]) -> InstallationClient | None:
        installation_id = (payload.get("installation") or {}).get("id")
        if self.app is None or installation_id is None:
            return None
        return self.app.installation(int(installation_id))
