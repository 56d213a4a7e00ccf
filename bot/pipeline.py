"""One PR head, start to finish: mirror fetch, snapshot, checks, stored report, publish.

The worker hands a ``pipeline`` job here. Everything GitHub-shaped goes through the
installation client; the checks see only the snapshot and their context.
"""

from __future__ import annotations

import logging
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from bot import rules as rules_module
from bot.checks import CheckContext, Section, Status
from bot.config import Settings
from bot.github_app import GitHubApp, InstallationClient
from bot.gitrepo import BlobReader
from bot.limits import InputRejected
from bot.mirror import RepoMirror, StaleHead
from bot.permissions import is_trusted
from bot.publish import Publisher
from bot.report import Report, build_report, render_markdown
from bot.sandbox import SandboxRunner
from bot.snapshot import GitTree, Snapshot, diff_files
from bot.store import state
from bot.store.open_prs import DatabaseIndex, apply_pull_request_event

log = logging.getLogger(__name__)


def parse_time(value: str | None) -> datetime:
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
        "state": pull.get("state", "open"),
    }


def config_change_section(snapshot: Snapshot, default_rules: str) -> Section | None:
    """When the PR changes ``.github/prbot.yml``: is the *new* file valid? The rules in force
    stay those at base; this says now what would otherwise fail only after the merge."""
    path = rules_module.REPO_RULES_PATH
    if not any(path in (f.path, f.previous_path) for f in snapshot.files):
        return None
    try:
        text = snapshot.head.read_text(path)
    except InputRejected as exc:
        return Section("rules", Status.FAIL, f"{path} as changed by this PR: {exc}")
    if text is None:
        return Section("rules", Status.PASS, f"{path} removed: after merge the defaults apply")
    try:
        rules_module.for_repository(text, default=default_rules)
    except rules_module.RulesError as exc:
        finding = {"path": path, "line": exc.line, "field": exc.field, "message": exc.problem}
        return Section(
            "rules",
            Status.FAIL,
            f"{path} as changed by this PR is invalid: {exc} (the base's rules were used)",
            findings=[finding],
        )
    return Section(
        "rules", Status.PASS, f"{path} as changed by this PR is valid (in force after merge)"
    )


class Pipeline:
    def __init__(self, settings: Settings, engine: Engine, app: GitHubApp | None) -> None:
        self.settings = settings
        self.engine = engine
        self.app = app
        self.runner = SandboxRunner(user=settings.sandbox_user)

    def run(self, job: dict[str, Any]) -> None:
        repo, number = job["repo"], job["number"]
        installation_id = job.get("installation_id")
        client = (
            self.app.installation(int(installation_id))
            if self.app is not None and installation_id is not None
            else None
        )
        pull = job.get("pull")
        if pull is None:  # /recheck: the current head, from GitHub
            if client is None:
                raise RuntimeError("a recheck needs GitHub access")
            info = client.get_pull(repo, number)
            pull = pull_summary(info.payload)
            state.observe_head(
                self.engine, repo, number, pull["head_sha"], parse_time(pull.get("updated_at"))
            )
        current = state.current_head(self.engine, repo, number)
        if current is not None and current != pull["head_sha"]:
            log.info("%s#%s: %s superseded by %s", repo, number, pull["head_sha"][:12], current)
            return
        publisher = self._publisher(client)
        mirror = RepoMirror(self.settings.data_dir, repo, job["clone_url"])
        token = client.token() if client is not None else None
        try:
            mirror.fetch_pull(token, number, pull["base_ref"], pull["base_sha"], pull["head_sha"])
        except StaleHead as exc:
            log.info("skipping: %s", exc)
            return
        if publisher is not None:
            # The check run shows "in progress" on the PR while the checks run; only once the
            # head is fetched, since a head force-pushed away has no commit to attach it to.
            publisher.start(repo, number, pull["head_sha"])
        snapshot = self.build_snapshot(mirror, repo, pull)
        try:
            if job.get("raw_pull_event"):
                self.update_open_pr_index(job["raw_pull_event"], snapshot)
            report = self.build_report(snapshot)
        finally:
            snapshot.close()
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
        if publisher is None or client is None:
            log.info(
                "dry run: report for %s#%s@%s stored, not published",
                repo,
                number,
                snapshot.head_sha[:12],
            )
            return
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

    def _publisher(self, client: InstallationClient | None) -> Publisher | None:
        if self.settings.dry_run or client is None or self.app is None:
            return None
        locks = self.settings.data_dir / "locks"
        return Publisher(self.engine, client, self.app.bot_login(), locks)

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
                open_prs=DatabaseIndex(self.engine, snapshot.repo),
                runner=self.runner,
                # uv's download cache outlives runs, so warm resolutions stay warm.
                uv_cache_dir=self.settings.data_dir / "uv-cache",
            )
            report = build_report(snapshot, ruleset, context)
        changed = config_change_section(snapshot, self.settings.default_rules)
        if changed is not None:
            report.sections.insert(0, changed)
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
    def update_open_pr_index(self, payload: dict[str, Any], snapshot: Snapshot | None) -> None:
        apply_pull_request_event(self.engine, payload, snapshot.files if snapshot else None)
