"""Publishing a report: one sticky comment and one check run per head, idempotently.

Each effect is recorded before it is attempted (``pending``) and after it succeeded
(``done`` with the GitHub id). A job that runs again after a crash therefore knows whether
it must look for what a previous attempt may have created, and a clean first attempt costs
no lookup: a steady-state ``synchronize`` is one comment edit and one check-run create.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from github import GithubException
from sqlalchemy import Engine

from bot.checks import Status, all_checks
from bot.core.markdown import escape_text, truncate_markdown
from bot.fixes.plan import FIX_ACTION, has_fix
from bot.github.annotations import annotations_for, batch_digest, batches
from bot.github.app import InstallationClient
from bot.report.render import MARKER, Report, render_status_lines, render_summary_line
from bot.runtime.locks import named_lock
from bot.store import state

log = logging.getLogger(__name__)

# GitHub caps check-run output text at 65,535 characters.
MAX_CHECK_TEXT = 65_000

CONCLUSIONS = {
    Status.PASS: "success",
    Status.SKIP: "success",
    Status.WARN: "neutral",
    Status.FAIL: "failure",
    # A check that could not verify the PR never passes: GitHub lets a required check through
    # only on success, neutral or skipped. "action_required" blocks like "failure" but says
    # what it is: a person must look (or /recheck), not "the PR is wrong".
    Status.ERROR: "action_required",
}


@dataclass(frozen=True)
class PublishResult:
    published: bool
    comment_id: int | None = None
    check_run_id: int | None = None
    reason: str = ""


def check_run_fields(report: Report, markdown: str, *, autofix: bool = True) -> dict:
    """The check run's body. Every string in it is escaped as the comment is.

    GitHub renders ``output.summary`` and ``output.text`` as Markdown, so user text there could
    show images, links and @mentions just as in a comment. The summary is the comment's own
    status lines (the same template and escaping), the text is the rendered comment, and the
    title is counts only. Annotations go separately, 50 per update (:func:`annotation_batches`).
    Cuts keep folds and fences closed.
    """
    # The "Apply fix" button, when the report holds a patch prbot can push (bot/fixes) and the
    # rules switched autofix on. An empty list takes a button off again (a re-run whose
    # report has nothing to fix).
    actions = [dict(FIX_ACTION)] if autofix and has_fix(report.to_json()) else []
    return {
        "status": "completed",
        "conclusion": CONCLUSIONS[report.status],
        "actions": actions,
        "output": {
            "title": str(escape_text(f"prbot: {render_summary_line(report)}")),
            "summary": truncate_markdown(
                render_status_lines(report), MAX_CHECK_TEXT, "…summary cut to fit the check run."
            ),
            "text": truncate_markdown(
                markdown, MAX_CHECK_TEXT, "…report cut to fit GitHub's check-run size limit."
            ),
        },
    }


def in_progress_fields(head_sha: str) -> dict:
    """The check run while the pipeline runs: GitHub shows it as running on the PR."""
    return {
        "status": "in_progress",
        "output": {
            "title": "prbot: running checks",
            "summary": f"Running the checks on `{head_sha[:12]}`; the report follows.",
        },
    }


def annotation_batches(report: Report) -> list[list[dict]]:
    titles = {check.name: check.title for check in all_checks()}
    return batches(annotations_for(report, titles))


class Publisher:
    def __init__(
        self,
        engine: Engine,
        client: InstallationClient,
        bot_login: str,
        lock_dir: Path,
        *,
        autofix: bool = True,
    ) -> None:
        self.engine = engine
        self.client = client
        self.bot_login = bot_login
        self.lock_dir = lock_dir
        self.autofix = autofix  # features.autofix: the check run's "Apply fix" button

    def start(self, repo: str, number: int, head_sha: str) -> int | None:
        """Mark the head's check run in progress (creating it the first time); None when a
        newer head has taken over the PR."""
        with named_lock(self.engine, f"publish:{repo}#{number}", self.lock_dir):
            current = state.current_head(self.engine, repo, number)
            if current is not None and current != head_sha:
                return None
            return self._check_run_id(repo, head_sha, in_progress_fields(head_sha), update=True)

    def publish(self, repo: str, number: int, report: Report, markdown: str) -> PublishResult:
        with named_lock(self.engine, f"publish:{repo}#{number}", self.lock_dir):
            current = state.current_head(self.engine, repo, number)
            if current is not None and current != report.head_sha:
                self._cancel_started_run(repo, report.head_sha, current)
                return PublishResult(False, reason=f"superseded by {current[:12]}")
            comment_id = self._sticky_comment(repo, number, report.head_sha, markdown)
            check_run_id = self._check_run(repo, report, markdown)
        return PublishResult(True, comment_id, check_run_id)

    def _cancel_started_run(self, repo: str, head_sha: str, newer: str) -> None:
        """A run ``start`` put in progress for a head a newer one overtook: complete it as
        cancelled, so the older commit does not show a check running for ever."""
        effect = state.get_effect(self.engine, f"check_run:{repo}@{head_sha}")
        if effect is None or not effect.external_id:
            return
        self.client.update_check_run(
            repo,
            int(effect.external_id),
            status="completed",
            conclusion="cancelled",
            output={
                "title": "prbot: superseded",
                "summary": f"A newer head (`{newer[:12]}`) has the report.",
            },
        )

    def _sticky_comment(self, repo: str, number: int, head_sha: str, markdown: str) -> int:
        key = f"comment:{repo}#{number}"
        effect = state.get_effect(self.engine, key)
        comment_id = int(effect.external_id) if effect and effect.external_id else None
        if comment_id is None and effect is not None:
            # An earlier attempt may have posted before it could record the id.
            comment_id = self.client.find_comment(repo, number, MARKER, self.bot_login)
        if comment_id is not None:
            if self.client.edit_comment(repo, comment_id, markdown):
                state.finish_effect(self.engine, key, str(comment_id), head_sha)
                return comment_id
            state.forget_effect(self.engine, key)  # deleted on GitHub: post it anew
        state.begin_effect(self.engine, key, head_sha)
        comment_id = self.client.create_comment(repo, number, markdown)
        state.finish_effect(self.engine, key, str(comment_id), head_sha)
        return comment_id

    def _check_run_id(self, repo: str, head_sha: str, fields: dict, *, update: bool) -> int:
        """The head's one check run: the recorded one, one an earlier attempt may have made,
        or a new one created with ``fields`` (sent to an existing one too when ``update``)."""
        key = f"check_run:{repo}@{head_sha}"
        effect = state.get_effect(self.engine, key)
        run_id = int(effect.external_id) if effect and effect.external_id else None
        if run_id is None and effect is not None:
            run_id = self.client.find_check_run(repo, head_sha)
        if run_id is not None:
            if update:
                self.client.update_check_run(repo, run_id, **fields)
        else:
            state.begin_effect(self.engine, key, head_sha)
            run_id = self.client.create_check_run(repo, head_sha, **fields)
        state.finish_effect(self.engine, key, str(run_id), head_sha)
        return run_id

    def _check_run(self, repo: str, report: Report, markdown: str) -> int:
        fields = check_run_fields(report, markdown, autofix=self.autofix)
        sha = report.head_sha
        run_id = self._check_run_id(repo, sha, in_progress_fields(sha), update=False)
        # GitHub appends annotations on every update and never drops them, so each batch is
        # an effect of its own: a replayed job (or a /recheck with the same findings) does
        # not add a batch twice.
        for batch in annotation_batches(report):
            key = f"annotations:{repo}@{sha}:{batch_digest(batch)}"
            effect = state.get_effect(self.engine, key)
            if effect is not None and effect.state == "done":
                continue
            state.begin_effect(self.engine, key, sha)
            output = {**fields["output"], "annotations": batch}
            output.pop("text")
            try:
                self.client.update_check_run(repo, run_id, status="in_progress", output=output)
            except GithubException as exc:
                if exc.status != 422:
                    raise
                # A batch GitHub refuses (a path it does not know) must not keep the run
                # in progress forever through retries: the report still completes it.
                log.warning("annotations refused on %s@%s: %s", repo, sha[:12], exc.data)
            state.finish_effect(self.engine, key, str(run_id), sha)
        self.client.update_check_run(repo, run_id, **fields)
        return run_id
