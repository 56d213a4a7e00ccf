"""The queue consumer: turns stored deliveries into reports, and commands into re-runs.

Jobs:
- ``delivery``: one stored webhook. Pull-request events record the head and enqueue a
  ``pipeline`` job (coalesced per PR, so a burst of pushes runs once for the newest head);
  comments are parsed for commands; installation events are recorded.
- ``pipeline``: fetch the PR into the mirror, build the snapshot, run the checks, store the
  report and publish it (unless dry-run).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import threading
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from bot import rules as rules_module
from bot.checks import CheckContext, Section, Status
from bot.commands import parse_commands
from bot.config import Settings
from bot.github_app import GitHubApp, InstallationClient
from bot.gitrepo import BlobReader, GitError, run_git
from bot.metrics import JOB_LATENCY
from bot.mirror import RepoMirror, StaleHead
from bot.permissions import command_allowed, effective_level, is_trusted, needs_permission_lookup
from bot.publish import Publisher
from bot.report import Report, build_report, render_markdown
from bot.sandbox import SandboxRunner
from bot.snapshot import GitTree, Snapshot, diff_files
from bot.store import deliveries, state
from bot.store.queue import Job, Queue

log = logging.getLogger(__name__)

PIPELINE_ACTIONS = {"opened", "synchronize", "reopened", "edited", "ready_for_review"}


def _parse_time(value: str | None) -> datetime:
    if not value:
        return datetime.now(UTC)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def pull_summary(pull: dict[str, Any]) -> dict[str, Any]:
    """The fields of a pull-request object the pipeline needs, small enough for a job row."""
    return {
        "number": pull["number"],
        "title": pull.get("title") or "",
        "body": pull.get("body") or "",
        "author": (pull.get("user") or {}).get("login", ""),
        "author_association": pull.get("author_association") or "NONE",
        "head_sha": pull["head"]["sha"],
        "base_sha": pull["base"]["sha"],
        "base_ref": pull["base"]["ref"],
        "created_at": pull.get("created_at"),
        "updated_at": pull.get("updated_at"),
        "html_url": pull.get("html_url"),
        "state": pull.get("state", "open"),
    }


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
        self.runner = SandboxRunner()

    # ---------------------------------------------------------------- loop
    def run_forever(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                worked = self.run_once()
            except Exception:  # noqa: BLE001 - the loop must survive anything
                log.exception("worker loop error")
                worked = False
            if not worked:
                stop.wait(self.settings.poll_seconds)

    def run_once(self) -> bool:
        job = self.queue.lease(self.worker_id)
        if job is None:
            return False
        started = time.monotonic()
        stop_heartbeat = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job, stop_heartbeat), daemon=True)
        beat.start()
        try:
            self.handle(job)
        except Exception as exc:  # noqa: BLE001 - recorded on the job, retried with backoff
            stop_heartbeat.set()
            outcome = self.queue.fail(job, f"{type(exc).__name__}: {exc}")
            log.error(
                "job %s (%s) failed, %s:\n%s", job.id, job.kind, outcome, traceback.format_exc()
            )
            JOB_LATENCY.labels(job.kind, outcome).observe(self._age(job))
        else:
            stop_heartbeat.set()
            self.queue.complete(job)
            JOB_LATENCY.labels(job.kind, "done").observe(self._age(job))
            log.info("job %s (%s) done in %.2fs", job.id, job.kind, time.monotonic() - started)
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
            self.run_pipeline(job.payload)
        else:
            raise ValueError(f"unknown job kind {job.kind!r}")

    def handle_delivery(self, delivery_id: int) -> None:
        delivery = deliveries.get_delivery(self.engine, delivery_id)
        if delivery is None:
            raise LookupError(f"delivery {delivery_id} is missing")
        payload = json.loads(delivery.body)
        if delivery.event == "pull_request":
            self.on_pull_request(delivery.action or "", payload)
        elif delivery.event == "issue_comment":
            self.on_issue_comment(payload)
        elif delivery.event in ("installation", "installation_repositories"):
            self.on_installation(delivery.action or "", payload)

    def on_installation(self, action: str, payload: dict[str, Any]) -> None:
        installation = payload.get("installation") or {}
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

    def on_pull_request(self, action: str, payload: dict[str, Any]) -> None:
        pull = payload["pull_request"]
        repo = payload["repository"]["full_name"]
        state.observe_head(
            self.engine,
            repo,
            pull["number"],
            pull["head"]["sha"],
            _parse_time(pull.get("updated_at")),
        )
        self._update_open_pr_index(payload, None)
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
        commands = [c for c in parse_commands(comment.get("body")) if c.known]
        if not commands:
            return
        repo = payload["repository"]["full_name"]
        number = issue["number"]
        client = self._client(payload)
        ruleset = self._rules_for_commands(payload)
        trust_bots = set(ruleset.trust.bots)
        if commenter in trust_bots:
            return
        allow = ruleset.commands.recheck.allow
        pr_author = (issue.get("user") or {}).get("login")
        level = None
        if needs_permission_lookup(allow, commenter=commenter, pr_author=pr_author):
            if client is None:
                level = "none"
            else:
                permission, role = client.permission(repo, commenter)
                level = effective_level(permission, role)
        if not command_allowed(allow, commenter=commenter, pr_author=pr_author, level=level):
            self._reply_unauthorized(client, payload, repo, number, commenter)
            return
        # Only /recheck exists today; one run however many times it is typed.
        if client is not None and not self.settings.dry_run:
            client.add_reaction(repo, comment["id"], "eyes")
        reason = next((c.argument for c in commands if c.name == "recheck"), "")
        self.enqueue_pipeline(
            payload,
            None,
            number=number,
            comment_id=comment.get("id"),
            reason=f"/recheck {reason}".strip(),
        )

    def _reply_unauthorized(
        self,
        client: InstallationClient | None,
        payload: dict[str, Any],
        repo: str,
        number: int,
        commenter: str,
    ) -> None:
        head = state.current_head(self.engine, repo, number) or "unknown"
        key = f"unauthorized_reply:{repo}#{number}@{head}"
        existing = state.get_effect(self.engine, key)
        if existing is not None or client is None or self.settings.dry_run:
            return
        state.begin_effect(self.engine, key, head)
        comment_id = client.create_comment(
            repo,
            number,
            f"@{commenter} only the PR author and people with write access can run "
            "`/recheck` here.",
        )
        state.finish_effect(self.engine, key, str(comment_id), head)

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

    # ---------------------------------------------------------------- pipeline
    def run_pipeline(self, job: dict[str, Any]) -> None:
        repo, number = job["repo"], job["number"]
        client = self._client({"installation": {"id": job.get("installation_id")}})
        pull = job.get("pull")
        if pull is None:  # /recheck: the current head, from GitHub
            if client is None:
                raise RuntimeError("a recheck needs GitHub access")
            info = client.get_pull(repo, number)
            pull = pull_summary(info.payload)
            state.observe_head(
                self.engine, repo, number, pull["head_sha"], _parse_time(pull.get("updated_at"))
            )
        current = state.current_head(self.engine, repo, number)
        if current is not None and current != pull["head_sha"]:
            log.info("%s#%s: %s superseded by %s", repo, number, pull["head_sha"][:12], current)
            return
        mirror = RepoMirror(self.settings.data_dir, repo, job["clone_url"])
        token = client.token() if client is not None else None
        try:
            mirror.fetch_pull(token, number, pull["base_ref"], pull["base_sha"], pull["head_sha"])
        except StaleHead as exc:
            log.info("skipping: %s", exc)
            return
        snapshot = self.build_snapshot(mirror, repo, pull)
        if job.get("raw_pull_event"):
            self._update_open_pr_index(job["raw_pull_event"], snapshot)
        report = self.build_report(snapshot)
        markdown = render_markdown(report, html_base=job.get("html_base") or "https://github.com")
        state.save_report(
            self.engine,
            repo,
            number,
            snapshot.head_sha,
            str(report.status),
            report.to_json(),
            markdown,
        )
        if self.settings.dry_run or client is None:
            log.info(
                "dry run: report for %s#%s@%s stored, not published",
                repo,
                number,
                snapshot.head_sha[:12],
            )
            return
        publisher = Publisher(
            self.engine,
            client,
            self.app.bot_login(),  # type: ignore[union-attr]
            self.settings.data_dir / "locks",
        )
        result = publisher.publish(repo, number, report, markdown)
        log.info(
            "%s#%s@%s: %s",
            repo,
            number,
            snapshot.head_sha[:12],
            "published" if result.published else result.reason,
        )
        if job.get("comment_id"):
            client.add_reaction(repo, int(job["comment_id"]), "rocket")

    def build_snapshot(self, mirror: RepoMirror, repo: str, pull: dict[str, Any]) -> Snapshot:
        reader = BlobReader(mirror.path)
        return Snapshot(
            repo=repo,
            base_sha=pull["base_sha"],
            head_sha=pull["head_sha"],
            base=GitTree(mirror.path, pull["base_sha"], reader),
            head=GitTree(mirror.path, pull["head_sha"], reader),
            files=diff_files(mirror.path, pull["base_sha"], pull["head_sha"]),
            number=pull["number"],
            title=pull["title"],
            body=pull["body"],
            author=pull["author"],
            author_association=pull["author_association"],
            trusted=False,  # decided by the repository's rules in build_report
            created_at=pull.get("created_at"),
            html_url=pull.get("html_url"),
            clone_dir=mirror.path,
        )

    def build_report(self, snapshot: Snapshot) -> Report:
        rules_error: str | None = None
        try:
            ruleset = rules_module.for_repository(
                snapshot.base.read_text(rules_module.REPO_RULES_PATH),
                default=self.settings.default_rules,
            )
        except rules_module.RulesError as exc:
            rules_error = str(exc)
            ruleset = rules_module.load_builtin(self.settings.default_rules)
        snapshot.trusted = is_trusted(
            snapshot.author_association, ruleset.trust.trusted_associations
        )
        with tempfile.TemporaryDirectory(prefix="prbot-run-") as work:
            context = CheckContext(
                work_dir=Path(work),
                cache=state.StoreCache(self.engine),
                open_prs=self._open_pr_index(snapshot.repo),
                runner=self.runner,
                dry_run=self.settings.dry_run,
            )
            report = build_report(snapshot, ruleset, context)
        if rules_error:
            report.sections.insert(
                0,
                Section(
                    "rules",
                    Status.ERROR,
                    f"{rules_module.REPO_RULES_PATH} is invalid, defaults used: {rules_error}",
                ),
            )
        return report

    # ---------------------------------------------------------------- duplicates index
    def _open_pr_index(self, repo: str) -> Any:
        try:
            from bot.duplicates.store import DatabaseIndex
        except ImportError:
            return None
        return DatabaseIndex(self.engine, repo)

    def _update_open_pr_index(self, payload: dict[str, Any], snapshot: Snapshot | None) -> None:
        try:
            from bot.duplicates.store import apply_pull_request_event
        except ImportError:
            return
        apply_pull_request_event(self.engine, payload, snapshot.files if snapshot else None)
