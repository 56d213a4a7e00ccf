"""One PR head, start to finish: mirror fetch, snapshot, checks, stored report, publish.

The ``pipeline`` job handler (bot/worker/handlers/pipeline.py) runs this. It is the server's edge
around :mod:`bot.report.runner`: it fetches, builds the trees, asks the runner for the report, then
stores and publishes it. Everything GitHub-shaped goes through the installation client.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bot.checks import CheckContext
from bot.core.features import missing_grants
from bot.core.sections import Section, Status
from bot.core.snapshot import Snapshot, snapshot_from_pull
from bot.github.app import InstallationClient
from bot.github.publish import Publisher
from bot.github.pulls import parse_time, pull_summary
from bot.local.mirror import RepoMirror, StaleHead
from bot.report.render import Report, render_markdown
from bot.report.runner import LoadedRules, build_report, decide_trust, rules_from_tree
from bot.runtime.logs import learn_fields, log_fields
from bot.runtime.settings import UV_CACHE_DIR_NAME
from bot.store import state
from bot.store.open_prs import DatabaseIndex, record_diff
from bot.worker.ci.flow import keep_report, queue_dispatch, report_context
from bot.worker.ci.stored_report import as_advisory
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.registry import on_job

log = logging.getLogger(__name__)


@contextmanager
def run_directory() -> Iterator[Path]:
    """A run's scratch directory, removed after. Traversable but not listable by others: a
    sandbox user reaches the trees handed to it inside (at mkdtemp's 0700 every absolute path
    it was given was "Permission denied"), and cannot list the others."""
    with tempfile.TemporaryDirectory(prefix="prbot-run-") as work:
        os.chmod(work, 0o711)
        yield Path(work)


class Pipeline:
    def __init__(self, ctx: HandlerContext) -> None:
        self.ctx = ctx
        self.settings = ctx.settings
        self.engine = ctx.engine
        self.app = ctx.app

    def run(self, job: dict[str, Any]) -> None:
        repo, number = job["repo"], job["number"]
        installation_id = job.get("installation_id")
        client = self.ctx.client(installation_id)
        pull = job.get("pull")
        if pull is None:  # /recheck: the current head, from GitHub
            if client is None:
                raise RuntimeError("a recheck needs GitHub access")
            info = client.get_pull(repo, number)
            pull = pull_summary(info.payload)
            state.observe_head(
                self.engine, repo, number, pull["head_sha"], parse_time(pull.get("updated_at"))
            )
        # A run queued without the head (a /recheck, a re-run) learns it here: from now on its
        # log lines name it, like those of a run queued by an event, the worker's "done" too.
        learn_fields(head=pull["head_sha"])
        with log_fields(head=pull["head_sha"]):  # where no job's block is open (a direct call)
            self._run_head(job, client, pull)

    def _run_head(
        self, job: dict[str, Any], client: InstallationClient | None, pull: dict[str, Any]
    ) -> None:
        repo, number = job["repo"], job["number"]
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
        snapshot, loaded = self.build_snapshot(mirror, repo, pull)
        # The rules in force (the base's) say whether the check run offers "Apply fix".
        publisher = self._publisher(client, "autofix" in loaded.ruleset.features.on())
        try:
            if publisher is not None:
                # The check run shows "in progress" while the checks run; only once the head
                # is fetched, since a head force-pushed away has no commit to attach it to.
                publisher.start(repo, number, pull["head_sha"])
            # The event's handler recorded the PR's text and state; its diff is known now.
            record_diff(self.engine, repo, number, snapshot.head_sha, snapshot.files)
            checked = self.check(snapshot, loaded)
        finally:
            snapshot.close()
        # A feature on whose permission the installation lacks: one line, the rest as it is.
        granted = client.granted() if client is not None else None
        for line in reversed(missing_grants(loaded.ruleset.features.on(), granted)):
            checked.sections.insert(0, Section("rules", Status.WARN, line))
        # Advisory (no features.dispatch): nothing waits for an approval prbot would act on.
        report = as_advisory(checked, "dispatch" in loaded.ruleset.features.on())
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
        # The whole report is kept for the GPU jobs' results (bot/worker/ci/flow.py).
        context = report_context(job, pull, loaded.ruleset, mirror.path)
        dispatch = keep_report(self.engine, checked, context)
        if publisher is None or client is None:
            log.info(
                "dry run: report for %s#%s@%s stored, not published",
                repo,
                number,
                snapshot.head_sha[:12],
            )
            queue_dispatch(self.ctx.queue, dispatch)
            return
        result = publisher.publish(repo, number, report, markdown)
        queue_dispatch(self.ctx.queue, dispatch)
        log.info(
            "%s#%s@%s: %s",
            repo,
            number,
            snapshot.head_sha[:12],
            "published" if result.published else result.reason,
        )
        if job.get("comment_id"):
            client.add_reaction(repo, int(job["comment_id"]), "rocket")

    def _publisher(self, client: InstallationClient | None, autofix: bool) -> Publisher | None:
        if self.settings.dry_run or client is None or self.app is None:
            return None
        locks = self.settings.data_dir / "locks"
        return Publisher(self.engine, client, self.app.bot_login(), locks, autofix=autofix)

    def build_snapshot(
        self, mirror: RepoMirror, repo: str, pull: dict[str, Any]
    ) -> tuple[Snapshot, LoadedRules]:
        """The head as the checks see it, with the rules in force (the base's) and the trust
        they give the author decided first."""
        return snapshot_from_pull(
            mirror.path,
            repo,
            pull,
            rules_from=lambda base: rules_from_tree(base, default=self.settings.default_rules),
            trusted_by=lambda loaded: decide_trust(pull["author_association"], loaded.ruleset),
        )

    def check(self, snapshot: Snapshot, loaded: LoadedRules) -> Report:
        """The runner over this head, with the server's services in the context."""
        with run_directory() as work:
            context = CheckContext(
                work_dir=work,
                cache=state.StoreCache(self.engine),
                open_prs=DatabaseIndex(self.engine, snapshot.repo),
                runner=self.ctx.sandbox,
                # uv's download cache outlives runs, so warm resolutions stay warm.
                uv_cache_dir=self.settings.data_dir / UV_CACHE_DIR_NAME,
            )
            return build_report(
                snapshot, loaded, context, default_rules=self.settings.default_rules
            )


@on_job("pipeline")
def run_pipeline(ctx: HandlerContext, job: dict[str, Any]) -> None:
    Pipeline(ctx).run(job)
