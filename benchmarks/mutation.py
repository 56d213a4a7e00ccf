"""Mutation probe: does breaking each promise make the whole test suite fail?

    uv run python benchmarks/mutation.py --check        # every pattern still matches once
    uv run python benchmarks/mutation.py --only J1 W5   # some mutations (and the baseline)
    PRBOT_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test \\
      uv run python benchmarks/mutation.py --write --log /tmp/mutation.jsonl

Each mutation names the promise it breaks (stated in README.md, SECURITY.md or docs/), the
exact source text it replaces, found by content and never by line number (other people
edit these files), and the test files most likely to catch it. The probe copies the working
tree (tracked and untracked files, not the venv) to a temporary directory, runs the whole
suite there unmutated (it must pass), then applies one mutation at a time and runs the
suite against it with ``-x``: the likely files first in one process, so a kill is cheap;
only when they pass, every other test file on ``--workers`` xdist processes, so a survivor
has passed the whole suite. The file is restored whatever happens; the working tree itself
is never written. A pattern that no longer matches exactly once, or a named test file that
is gone, stops the probe before anything runs: update the list.

A mutation is *killed* when a test fails (or the run times out), *survived* when the whole
suite passes. The target is every mutation killed; a survivor is a promise no test holds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks" / "mutation.md"
NAMED_TIMEOUT = 600.0  # seconds for the likely files; a hang counts as killed, and is reported
SUITE_TIMEOUT = 1800.0  # seconds for the rest of the suite


@dataclass(frozen=True)
class Edit:
    path: str
    find: str
    replace: str


@dataclass(frozen=True)
class Mutation:
    id: str
    promise: str
    edits: tuple[Edit, ...]
    tests: tuple[str, ...]


def m(id: str, promise: str, path: str, find: str, replace: str, *tests: str) -> Mutation:
    return Mutation(id, promise, (Edit(path, find, replace),), tests)


E2E = "tests/test_end_to_end.py"
STALE = "tests/test_invariant_stale_heads.py"
PUBLISH = "tests/test_invariant_publish.py"
COMMANDS = "tests/test_invariant_commands.py"
JOBS_E2E = "tests/test_jobs_end_to_end.py"

# Keep this list growing as promises appear (job dispatch idempotence, per-SHA approval).
MUTATIONS: tuple[Mutation, ...] = (
    # --- webhooks.py: verification before anything else
    m(
        "W1",
        "Any rotated secret verifies (not only the last one)",
        "bot/events/webhooks.py",
        'valid |= hmac.compare_digest("sha256=" + mac.hexdigest(), header)',
        'valid = hmac.compare_digest("sha256=" + mac.hexdigest(), header)',
        "tests/test_invariant_webhooks.py",
        "tests/test_webhooks.py",
    ),
    m(
        "W2",
        "A body whose signature fails is 401 and never parsed (malformed JSON is 400 only after)",
        "bot/intake/github.py",
        'return _answer(401, None, "bad_signature", verified=False, message=str(exc))',
        'return _answer(400, None, "bad_signature", verified=False, message=str(exc))',
        "tests/test_invariant_webhooks.py",
    ),
    m(
        "W3",
        "A delivery whose signature does not match is refused",
        "bot/events/webhooks.py",
        "        if not valid:\n            raise",
        "        if False:\n            raise",
        "tests/test_webhooks.py",
        "tests/test_invariant_webhooks.py",
    ),
    m(
        "W4",
        "Only the handled actions are stored (an edited comment is no command)",
        "bot/events/webhooks.py",
        '"issue_comment": frozenset({"created"}),',
        '"issue_comment": None,',
        "tests/test_webhooks.py",
    ),
    # --- store/deliveries.py: once per GUID, with its job
    m(
        "D1",
        "A repeated delivery is stored and processed once",
        "bot/store/deliveries.py",
        "        if delivery_id is None:\n            return False\n",
        "        if delivery_id is None:\n            return True\n",
        "tests/test_store_deliveries.py",
    ),
    m(
        "D2",
        "A delivery is stored with its queue job",
        "bot/store/deliveries.py",
        "        enqueue_job(\n            connection,\n            DELIVERY_JOB_KIND,",
        "        (lambda *args, **kwargs: None)(\n"
        "            connection,\n            DELIVERY_JOB_KIND,",
        "tests/test_store_deliveries.py",
    ),
    # --- publish.py: one sticky comment and one check run, never for an older head
    m(
        "P1",
        "A report for an older head never overwrites a newer one (publisher's guard)",
        "bot/github/publish.py",
        "if current is not None and current != report.head_sha:",
        "if False:",
        f"{STALE}::test_a_report_for_an_older_head_never_overwrites_a_newer_one",
        PUBLISH,
    ),
    m(
        "P2",
        "A rerun after a crash finds the comment it made instead of posting another",
        "bot/github/publish.py",
        "        if comment_id is None and effect is not None:\n",
        "        if False:\n",
        PUBLISH,
    ),
    m(
        "P3",
        "A report comment deleted on GitHub is posted anew",
        "bot/github/publish.py",
        "state.forget_effect(self.engine, key)  # deleted on GitHub: post it anew",
        "return comment_id  # deleted on GitHub: post it anew",
        f"{E2E}::test_deleted_report_comment_is_posted_anew",
    ),
    m(
        "P4",
        "A rerun after a crash updates the check run it made",
        "bot/github/publish.py",
        "        if run_id is None and effect is not None:\n",
        "        if False:\n",
        PUBLISH,
    ),
    m(
        "P5",
        "One comment per PR, edited in place as the PR moves",
        "bot/github/publish.py",
        "        if comment_id is not None:\n            if self.client.edit_comment(",
        "        if False:\n            if self.client.edit_comment(",
        f"{E2E}::test_opened_then_synchronize_edits_one_comment",
    ),
    # --- pipeline.py: the early guard, the StaleHead skip, dry run, rules at base
    m(
        "L1",
        "A report for an older head never overwrites a newer one (pipeline's guard)",
        "bot/worker/handlers/pipeline.py",
        'if current is not None and current != pull["head_sha"]:',
        "if False:",
        f"{STALE}::test_an_older_head_delivered_late_is_never_reported",
    ),
    Mutation(
        "L2",
        "A report for an older head never overwrites a newer one (both guards at once)",
        (
            Edit(
                "bot/github/publish.py",
                "if current is not None and current != report.head_sha:",
                "if False:",
            ),
            Edit(
                "bot/worker/handlers/pipeline.py",
                'if current is not None and current != pull["head_sha"]:',
                "if False:",
            ),
        ),
        (STALE,),
    ),
    m(
        "L3",
        "A head force-pushed away is skipped, not retried into a dead letter",
        "bot/worker/handlers/pipeline.py",
        '            log.info("skipping: %s", exc)\n            return\n',
        "            raise\n",
        f"{STALE}::test_a_head_force_pushed_away_and_gone_is_skipped_not_retried",
    ),
    m(
        "L4",
        "--dry-run writes nothing to GitHub",
        "bot/worker/handlers/pipeline.py",
        "if self.settings.dry_run or client is None or self.app is None:",
        "if client is None or self.app is None:",
        f"{E2E}::test_dry_run_stores_the_report_and_writes_nothing_to_github",
    ),
    m(
        "L5",
        "Rules are read at the PR's base, so a PR cannot relax its own",
        "bot/core/snapshot.py",
        "    rules = rules_from(base)",
        '    rules = rules_from(GitTree(repo_dir, pull["head_sha"], reader))',
        "tests/test_invariant_pipeline.py",
    ),
    # --- github_app.py: the sticky comment by marker and bot author; the check run by name
    m(
        "G1",
        "The sticky comment is found by marker and bot author (author check dropped)",
        "bot/github/app.py",
        'if comment.user.login == author and marker in (comment.body or ""):',
        'if marker in (comment.body or ""):',
        PUBLISH,
    ),
    m(
        "G2",
        "The sticky comment is found by marker and bot author (marker check dropped)",
        "bot/github/app.py",
        'if comment.user.login == author and marker in (comment.body or ""):',
        "if comment.user.login == author:",
        PUBLISH,
    ),
    m(
        "G3",
        "The check run found after a crash is prbot's, not another check's",
        "bot/github/app.py",
        "commit.get_check_runs(check_name=CHECK_RUN_NAME)",
        "commit.get_check_runs()",
        PUBLISH,
    ),
    m(
        "G4",
        "A comment deleted on GitHub is noticed (404) rather than a failure",
        "bot/github/app.py",
        "            if exc.status in (404, 410):\n                return False\n",
        "            if False:\n                return False\n",
        f"{E2E}::test_deleted_report_comment_is_posted_anew",
    ),
    m(
        "G5",
        "A request that may have taken effect is never resent (writes and read errors)",
        "bot/github/app.py",
        "CountedRetry(total=5, backoff_factor=0.5, read=0, allowed_methods=READ_METHODS)",
        "CountedRetry(total=5, backoff_factor=0.5)",
        "tests/test_worker_crash.py::test_slow_github_answer_after_comment_created_is_not_posted_twice",
    ),
    # --- commands.py: what counts as a command
    m(
        "C1",
        "A quoted command is never run (lazy continuation lines included)",
        "bot/events/commands.py",
        '_HIDING_BLOCKS = {"blockquote_open": 1,',
        '_HIDING_BLOCKS = {"blockquote_open": 0,',
        "tests/test_commands.py",
        f"{COMMANDS}::test_a_command_on_a_quotes_continuation_line_is_quoted",
    ),
    Mutation(
        "C2",
        "Only a line that starts with / is a command (not a slash inside a sentence)",
        (
            Edit(
                "bot/events/commands.py", '_COMMAND = re.compile(r"^/', '_COMMAND = re.compile(r"/'
            ),
            Edit("bot/events/commands.py", "if _COMMAND.match(line):", "if _COMMAND.search(line):"),
        ),
        ("tests/test_commands.py",),
    ),
    # (Skipping quoted lines, and cutting inline code before matching, are not in this list:
    # no input tells them apart from the mutant, since the command pattern already refuses any
    # line that starts with ">" or "`". Quotes are pinned by test_commands all the same.)
    m(
        "C3",
        "A command in a heading or a table is never run (only paragraphs count)",
        "bot/events/commands.py",
        'and tokens[index - 1].type == "paragraph_open"',
        "and True",
        "tests/test_commands.py",
    ),
    # --- handlers: bots' comments, installation events, refusals
    m(
        "K1",
        "The bot's own comments (and other bots') are never commands (filter deleted)",
        "bot/worker/handlers/issue_comment.py",
        'if not issue.get("pull_request") or _from_a_bot(comment):',
        'if not issue.get("pull_request"):',
        f"{COMMANDS}::test_bots_comments_are_never_commands",
    ),
    m(
        "K2",
        "Bots' comments are never commands (Bot user check dropped)",
        "bot/worker/handlers/issue_comment.py",
        'return user.get("type") == "Bot" or comment.get(',
        "return False or comment.get(",
        f"{COMMANDS}::test_bots_comments_are_never_commands",
    ),
    m(
        "K3",
        "Bots' comments are never commands (App attribution check dropped)",
        "bot/worker/handlers/issue_comment.py",
        'comment.get("performed_via_github_app") is not None',
        "False",
        f"{COMMANDS}::test_bots_comments_are_never_commands",
    ),
    m(
        "K4",
        "An installation queues a reconcile of its repositories",
        "bot/worker/handlers/installation.py",
        "if event.action in INDEXING_ACTIONS:",
        "if False:",
        f"{E2E}::test_installation_events_are_recorded",
    ),
    m(
        "K5",
        "An installation is recorded with its account",
        "bot/worker/handlers/installation.py",
        '((installation.get("account") or {}).get("login") or ""),',
        '"",',
        f"{E2E}::test_installation_events_are_recorded",
    ),
    m(
        "K6",
        "Commands are checked against the commenter's permission",
        "bot/worker/handlers/issue_comment.py",
        "if not allowed(command.name):",
        "if False:",
        f"{E2E}::test_unauthorized_recheck_is_refused_once_per_head",
    ),
    m(
        "K7",
        "An unauthorized command is answered once per head",
        "bot/worker/handlers/context.py",
        "if state.get_effect(self.engine, key) is not None:",
        "if False:",
        f"{E2E}::test_unauthorized_recheck_is_refused_once_per_head",
    ),
    # --- permissions.py: policy
    m(
        "M1",
        "'author' allows only the PR's author",
        "bot/events/permissions.py",
        'if "author" in allowed and pr_author and commenter.lower() == pr_author.lower():',
        'if "author" in allowed:',
        "tests/test_permissions.py",
    ),
    m(
        "M2",
        "A permission level must be one the policy allows",
        "bot/events/permissions.py",
        "return level is not None and level in allowed",
        "return level is not None",
        "tests/test_permissions.py",
    ),
    m(
        "M3",
        "maintain and triage come from role_name, not the folded permission",
        "bot/events/permissions.py",
        "    if role_name in LEVELS:\n",
        "    if False:\n",
        "tests/test_permissions.py",
    ),
    m(
        "M4",
        "Only the trusted associations are trusted",
        "bot/events/permissions.py",
        'return (author_association or "NONE").upper()'
        " in {a.upper() for a in trusted_associations}",
        "return True",
        "tests/test_permissions.py",
    ),
    # --- store/queue.py: leases, attempts, coalescing
    m(
        "Q1",
        "A worker whose lease was taken over cannot complete the job",
        "bot/store/queue.py",
        '.where(self._holding(job))\n                .values(state="done"',
        '.where(jobs.c.id == job.id)\n                .values(state="done"',
        "tests/test_store_queue.py::test_expired_lease_is_taken_over_and_old_worker_loses",
    ),
    m(
        "Q2",
        "A job that keeps crashing its worker goes dead instead of leased forever",
        "bot/store/queue.py",
        "if candidate.attempts >= self.max_attempts:",
        "if False:",
        "tests/test_store_queue.py::test_crash_looping_job_goes_dead_instead_of_leased",
    ),
    m(
        "Q3",
        "A failing job becomes a dead letter after its attempts",
        "bot/store/queue.py",
        "            if attempts >= self.max_attempts:\n",
        "            if False:\n",
        "tests/test_store_queue.py::test_fail_retries_with_exponential_backoff_then_dies",
    ),
    m(
        "Q4",
        "Retries back off exponentially",
        "bot/store/queue.py",
        "delay = min(self.backoff_cap_seconds, self.backoff_seconds * 2 ** (attempts - 1))",
        "delay = 0",
        "tests/test_store_queue.py",
    ),
    m(
        "Q5",
        "A burst of pushes coalesces into one queued job",
        "bot/store/queue.py",
        "    if dedupe_key is None:\n        return connection.execute(INSERT_JOB, values)",
        "    if True:\n        return connection.execute(INSERT_JOB, values)",
        "tests/test_store_queue.py::test_dedupe_key_coalesces_queued_jobs",
        "tests/test_store_concurrency.py::test_concurrent_coalescing_keeps_one_queued_job",
    ),
    m(
        "Q6",
        "An expired lease is taken over by another worker",
        "bot/store/queue.py",
        '("leased", jobs.c.lease_expires_at <= now),',
        '("leased", sa.false()),',
        "tests/test_store_queue.py",
    ),
    # --- sandbox.py: nothing secret around, limits, the whole group killed
    m(
        "S1",
        "A sandboxed tool's whole session dies with it, on every exit",
        "bot/local/sandbox.py",
        "if int(fields[3]) == leader:",
        "if False:",
        "tests/test_sandbox.py::test_without_namespaces_the_childs_session_still_dies_on_a_normal_exit",
    ),
    m(
        "S2",
        "No token or prbot setting reaches a sandboxed tool",
        "bot/local/sandbox.py",
        'return allowlisted_environment({"HOME": str(home), **self.extra_env, **(extra or {})})',
        'return {**os.environ, "HOME": str(home), **self.extra_env, **(extra or {})}',
        "tests/test_sandbox.py::test_secrets_are_not_in_the_child_environment",
    ),
    m(
        "S3",
        "A sandboxed tool runs under a memory limit",
        "bot/local/sandbox.py",
        "resource.setrlimit(resource.RLIMIT_AS, (memory, memory))",
        "pass",
        "tests/test_sandbox.py::test_memory_limit_applies",
    ),
    m(
        "S4",
        "With PRBOT_SANDBOX_USER, tools run as that account (needs root, else skipped)",
        "bot/local/sandbox.py",
        "os.setuid(identity[0])",
        "pass",
        "tests/test_sandbox.py::test_children_run_as_another_user_and_cannot_read_prbots_secrets",
    ),
    # --- the intake: rotation, bounds, labels (SECURITY.md: Before a signature checks)
    m(
        "W5",
        "Every configured secret is checked, not only the first (PRBOT_WEBHOOK_SECRET=new,old)",
        "bot/events/webhooks.py",
        "for secret in secrets]",
        "for secret in secrets[:1]]",
        "tests/test_invariant_webhooks.py",
    ),
    m(
        "W6",
        "Bodies over 25 MiB are refused (413), the documented figure",
        "bot/runtime/settings.py",
        "MAX_BODY_BYTES = 25 * 1024 * 1024",
        "MAX_BODY_BYTES = 250 * 1024 * 1024",
        "tests/test_reliability_hostile.py",
        "tests/test_end_to_end.py",
    ),
    m(
        "W7",
        "Nothing from an unverified request becomes a metric label",
        "bot/runtime/metrics.py",
        "    if not verified:\n        return UNVERIFIED_EVENT",
        "    if False:\n        return UNVERIFIED_EVENT",
        "tests/test_intake_limits.py::test_unsigned_posts_with_random_event_names_add_no_metric_series",
        "tests/test_metrics.py",
    ),
    m(
        "V1",
        "Ids are strict integers within BIGINT range before anything is stored",
        "bot/events/payloads.py",
        "GitHubId = Annotated[StrictInt, Field(ge=1, le=BIGINT_MAX)]",
        "GitHubId = Annotated[int, Field(ge=1)]",
        "tests/test_payloads.py",
        "tests/test_intake_validation.py",
    ),
    # --- Buildkite deliveries (SECURITY.md: GPU jobs; docs/http.md)
    m(
        "B1",
        "Any rotated Buildkite webhook token is taken (X-Buildkite-Token)",
        "bot/events/buildkite.py",
        'valid |= hmac.compare_digest(expected.encode(), token.encode("utf-8", "replace"))',
        'valid = hmac.compare_digest(expected.encode(), token.encode("utf-8", "replace"))',
        "tests/test_invariant_buildkite.py",
    ),
    m(
        "B2",
        "Any rotated Buildkite webhook token is taken (X-Buildkite-Signature)",
        "bot/events/buildkite.py",
        'valid |= hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))',
        'valid = hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))',
        "tests/test_invariant_buildkite.py",
        "tests/test_jobs_buildkite_webhook.py",
    ),
    m(
        "B3",
        "A stale signature timestamp is refused (a captured delivery cannot be replayed)",
        "bot/events/buildkite.py",
        "if abs(current - int(stamp)) > max_age:",
        "if False:",
        "tests/test_jobs_buildkite_webhook.py",
    ),
    m(
        "B4",
        "Buildkite bodies over 2 MiB are 413, the documented figure",
        "bot/intake/buildkite.py",
        "MAX_BODY_BYTES = 2 * 1024 * 1024",
        "MAX_BODY_BYTES = 200 * 1024 * 1024",
        "tests/test_invariant_buildkite.py",
    ),
    m(
        "B5",
        "A body without a true Content-Length is cut at its limit while it streams (both intakes)",
        "bot/intake/body.py",
        "if spool.size + len(chunk) > limit:\n                    raise BodyTooLarge",
        "if False:\n                    raise BodyTooLarge",
        "tests/test_invariant_buildkite.py",
        "tests/test_intake_body.py",
    ),
    m(
        "B6",
        "Buildkite deliveries are verified before anything is stored",
        "bot/intake/buildkite.py",
        "        verify(\n            headers,",
        "        (lambda *args, **kwargs: None)(\n            headers,",
        "tests/test_jobs_buildkite_intake.py",
    ),
    # --- GPU jobs (SECURITY.md: GPU jobs; docs/gpu-jobs.md, docs/checks/jobs.md)
    m(
        "J1",
        "/approve-gpu needs write access by default (a PR author cannot approve their own jobs)",
        "bot/report/rules.py",
        'allow=["write", "maintain", "admin"], aliases=["approve-gpu"]',
        'allow=["author", "write", "maintain", "admin"], aliases=["approve-gpu"]',
        "tests/test_invariant_gpu_jobs.py",
    ),
    m(
        "J2",
        "A dispatch whose jobs another worker claimed creates no build",
        "bot/worker/ci/dispatch.py",
        "            if not won:\n                continue",
        "            if False:\n                continue",
        "tests/test_invariant_gpu_jobs.py",
        "tests/test_jobs_dispatch.py",
    ),
    m(
        "J3",
        "A head that moved before dispatch gets no build (the dispatcher's guard)",
        "bot/worker/ci/dispatch.py",
        "        if moved:\n            log.info(",
        "        if False:\n            log.info(",
        "tests/test_jobs_dispatch.py",
    ),
    m(
        "J4",
        "A label approves only the head it was added on while that is the head (handler guard)",
        "bot/worker/handlers/approve.py",
        "if not labeled_head or client.get_pull(repo, number).head_sha != labeled_head:",
        "if not labeled_head:",
        f"{JOBS_E2E}::test_approvals_by_label_and_of_the_head_the_approver_saw",
    ),
    m(
        "J5",
        "A comment approves only a head whose report it followed (a push needs a new one)",
        "bot/worker/handlers/approve.py",
        'if not _before(kept, call.comment.get("created_at")):',
        "if False:",
        f"{JOBS_E2E}::test_approvals_by_label_and_of_the_head_the_approver_saw",
    ),
    m(
        "J6",
        "Every benchmark ratio has a 95% interval",
        "bot/jobs/compare.py",
        "margin = t_quantile(0.975, test.df) * test.standard_error",
        "margin = t_quantile(0.95, test.df) * test.standard_error",
        "tests/test_invariant_gpu_jobs.py",
        "tests/test_jobs_compare.py",
    ),
    m(
        "J7",
        "A regression is head at least 5% slower (exactly 5% included) and significant",
        "bot/jobs/compare.py",
        "if significant and ratio >= upper:",
        "if significant and ratio > upper:",
        "tests/test_invariant_gpu_jobs.py",
        "tests/test_jobs_compare.py",
    ),
    m(
        "J8",
        "An empty dependency string selects no step (substring reading)",
        "bot/jobs/buildkite_steps.py",
        "return bool(dependency) and dependency in path",
        "return dependency in path",
        "tests/test_invariant_gpu_jobs.py",
        "tests/test_jobs_selection.py",
    ),
    m(
        "J9",
        "A job's result files are read up to the cap, no further",
        "bot/engines/buildkite.py",
        "for artifact in listed[:max_files]:",
        "for artifact in listed:",
        "tests/test_invariant_buildkite.py",
    ),
    m(
        "J10",
        "A results file is bounded in size by its parser (whatever the download allowed)",
        "bot/jobs/benchmark_results.py",
        "    if len(text) > MAX_RESULT_BYTES:\n",
        "    if False:\n",
        "tests/test_invariant_gpu_jobs.py",
    ),
    # --- escaping (SECURITY.md: Everything users wrote is escaped)
    m(
        "X1",
        "No #123 cross-reference inside a <summary>",
        "bot/core/markdown.py",
        '    return Markup(_ISSUE_REF.sub("#" + _ZERO_WIDTH_JOINER, text))',
        "    return Markup(text)",
        "tests/test_markdown.py",
    ),
    m(
        "X2",
        "No @mention inside a <summary>",
        "bot/core/markdown.py",
        '    text = _MENTION.sub("@" + _ZERO_WIDTH_JOINER, text)\n    return Markup(_ISSUE_REF',
        "    return Markup(_ISSUE_REF",
        "tests/test_markdown.py",
    ),
    m(
        "X3",
        "No #123 cross-reference in Markdown text",
        "bot/core/markdown.py",
        '    text = _ISSUE_REF.sub("#" + _ZERO_WIDTH_JOINER, text)\n    text = _MARKDOWN_SPECIAL',
        "    text = _MARKDOWN_SPECIAL",
        "tests/test_markdown.py",
    ),
    # --- bounds on what a PR brings (docs/checks/README.md, docs/checks/requirements.md)
    m(
        "F1",
        "A file whose diff is over 1 MB is named, its lines not read",
        "bot/core/snapshot.py",
        "len(chunk) <= MAX_PATCH_BYTES",
        "True",
        "tests/test_snapshot.py",
    ),
    m(
        "F2",
        "The per-file diff limit is 1 MB, the documented figure",
        "bot/core/snapshot.py",
        "MAX_PATCH_BYTES = 1_000_000",
        "MAX_PATCH_BYTES = 10_000_000",
        "tests/test_snapshot.py",
    ),
    m(
        "F3",
        "A file read from the tree is bounded at 8 MB, the documented figure",
        "bot/core/snapshot.py",
        "MAX_TREE_FILE_BYTES = 8_000_000",
        "MAX_TREE_FILE_BYTES = 80_000_000",
        "tests/test_snapshot.py",
    ),
    m(
        "F4",
        "A file that grows while it is read is still bounded",
        "bot/core/snapshot.py",
        "        if len(data) > MAX_TREE_FILE_BYTES:\n            raise too_large(path, len(data))",
        "        if False:\n            raise too_large(path, len(data))",
        "tests/test_snapshot.py",
    ),
    m(
        "F5",
        "A requirement file over 1 MB is a problem naming it, the documented figure",
        "bot/core/limits.py",
        "MAX_REQUIREMENTS_BYTES = 1_000_000",
        "MAX_REQUIREMENTS_BYTES = 10_000_000",
        "tests/test_requirements_graph.py",
    ),
    m(
        "F6",
        "An include closure reads at most 2,000 files, the documented figure",
        "bot/requirements/graph.py",
        "MAX_CLOSURE_FILES = 2_000",
        "MAX_CLOSURE_FILES = 3_000",
        "tests/test_requirements_graph.py",
    ),
    m(
        "R1",
        "An untrusted author's requirements are resolved from wheels only (uv --no-build)",
        "bot/requirements/analysis.py",
        'if not snapshot.trusted and "--no-build" not in rules.uv_options:',
        "if False:",
        "tests/test_requirements_check.py::test_untrusted_authors_requirements_are_resolved_without_building",
    ),
    m(
        "H1",
        "Each head is swept at most three times, the documented figure",
        "bot/repair/head_sweeps.py",
        "MAX_SWEEPS = 3",
        "MAX_SWEEPS = 4",
        "tests/test_reliability_sweeps.py",
    ),
    # --- sandbox and child processes (SECURITY.md: A PR's own files)
    m(
        "S5",
        "A sandboxed tool runs under a CPU-time limit",
        "bot/local/sandbox.py",
        "resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))",
        "pass",
        "tests/test_invariant_sandbox.py",
    ),
    m(
        "S6",
        "A sandboxed tool runs under a file-size limit",
        "bot/local/sandbox.py",
        "resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))",
        "pass",
        "tests/test_invariant_sandbox.py",
    ),
    m(
        "E1",
        "Every child process gets an allowlisted environment (no secret, key path or database URL)",
        "bot/local/childenv.py",
        "if key in PASSED_THROUGH or key.startswith(PASSED_THROUGH_PREFIXES)",
        "if True",
        "tests/test_childenv.py",
    ),
)


# --------------------------------------------------------------------------- the probe
class PatternError(SystemExit):
    pass


def copy_tree(source: Path, target: Path) -> None:
    """The working tree as it is (uncommitted edits included), without ignored files."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        origin = source / rel
        if not origin.is_file():  # deleted but still in the index
            continue
        destination = target / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, destination, follow_symlinks=False)


def check_patterns(tree: Path, mutations: tuple[Mutation, ...]) -> None:
    """Every pattern found exactly once and every named test file present, or stop loudly."""
    problems = []
    ids = [mutation.id for mutation in mutations]
    problems += [f"{i}: id used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for mutation in mutations:
        for edit in mutation.edits:
            path = tree / edit.path
            text = path.read_text() if path.exists() else ""
            count = text.count(edit.find)
            if count != 1:
                what = "pattern not found" if count == 0 else f"pattern found {count} times"
                problems.append(f"{mutation.id} {edit.path}: {what}: {edit.find!r}")
        for test in mutation.tests:
            if not (tree / test.split("::")[0]).exists():
                problems.append(f"{mutation.id}: no test file {test.split('::')[0]}")
    if problems:
        raise PatternError(
            "mutation list out of date (update the list in benchmarks/mutation.py):\n  "
            + "\n  ".join(problems)
        )


def environment(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)  # the copy's bot/, never the working tree's
    env.pop("COVERAGE_PROCESS_START", None)
    env.pop("COVERAGE_PROCESS_CONFIG", None)
    return env


_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


@dataclass
class Run:
    outcome: str  # passed | failed | timeout
    seconds: float
    failed: str  # the first failing test, or the last line of output
    every_failed: tuple[str, ...] = ()


def run_pytest(
    tree: Path, args: list[str], *, workers: int, timeout: float, stop_first: bool = True
) -> Run:
    """pytest in the copy, stopping at the first failure (-x), in a fixed order."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    argv += ["-x"] if stop_first else []
    argv += ["-p", "no:randomly", "-n", str(workers)]
    if workers > 0:
        argv += ["--dist", "loadfile"]
    started = time.monotonic()
    try:
        proc = subprocess.run(
            argv + args,
            cwd=tree,
            env=environment(tree),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Run("timeout", time.monotonic() - started, f"timed out after {timeout:.0f}s")
    seconds = time.monotonic() - started
    if proc.returncode == 0:
        return Run("passed", seconds, "")
    found = _FAILED.findall(proc.stdout)
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    first = found[0] if found else (lines[-1] if lines else "")
    return Run("failed", seconds, first, tuple(dict.fromkeys(found)))


def apply(tree: Path, mutation: Mutation) -> dict[Path, str]:
    originals: dict[Path, str] = {}
    for edit in mutation.edits:
        path = tree / edit.path
        current = path.read_text()
        originals.setdefault(path, current)
        if current.count(edit.find) != 1:
            restore(originals)
            raise PatternError(f"{mutation.id} {edit.path}: pattern not found: update the list")
        path.write_text(current.replace(edit.find, edit.replace, 1))
    return originals


def restore(originals: dict[Path, str]) -> None:
    for path, text in originals.items():
        path.write_text(text)


@dataclass
class Result:
    id: str
    outcome: str  # killed | survived
    by: str  # the test that failed first (or why: a timeout)
    stage: str  # named (the likely tests) or suite (the rest of the whole suite)
    seconds: float


def every_test_file(tree: Path) -> list[str]:
    return sorted(str(p.relative_to(tree)) for p in (tree / "tests").glob("test_*.py"))


def try_mutation(
    tree: Path, mutation: Mutation, workers: int, named_only: bool, skip: list[str]
) -> Result:
    """The likely tests first, one process (cheap when they kill); then, only if they pass,
    every other test file of the suite on ``workers`` processes, so a survivor has passed
    the whole suite."""
    originals = apply(tree, mutation)
    try:
        named = run_pytest(tree, [*mutation.tests, *skip], workers=0, timeout=NAMED_TIMEOUT)
        seconds = named.seconds
        if named.outcome != "passed":
            return Result(mutation.id, "killed", named.failed, "named", seconds)
        if named_only:
            return Result(mutation.id, "survived", "", "named", seconds)
        whole_files = {t for t in mutation.tests if "::" not in t}
        rest = [f for f in every_test_file(tree) if f not in whole_files]
        suite = run_pytest(tree, [*rest, *skip], workers=workers, timeout=SUITE_TIMEOUT)
        seconds += suite.seconds
        if suite.outcome != "passed":
            return Result(mutation.id, "killed", suite.failed, "suite", seconds)
        return Result(mutation.id, "survived", "", "suite", seconds)
    finally:
        restore(originals)


def probe(
    mutations: tuple[Mutation, ...],
    *,
    workers: int,
    baseline: bool,
    log: Path | None,
    named_only: bool = False,
) -> tuple[list[Result], float | None, list[str]]:
    work = Path(tempfile.mkdtemp(prefix="prbot-mutation-"))
    tree = work / "tree"
    try:
        copy_tree(ROOT, tree)
        check_patterns(tree, mutations)
        where = subprocess.run(
            [sys.executable, "-c", "import bot; print(bot.__file__)"],
            cwd=tree,
            env=environment(tree),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not where.startswith(str(tree)):
            raise SystemExit(f"the copy's tests would import {where}, not the copy")
        baseline_seconds = None
        failing: list[str] = []  # tests that fail unmutated tell no mutant apart: deselected
        if baseline:
            print("baseline: the whole suite on the unmutated copy", flush=True)
            run = run_pytest(
                tree,
                every_test_file(tree),
                workers=workers,
                timeout=SUITE_TIMEOUT,
                stop_first=False,
            )
            if run.outcome == "timeout" or (run.outcome == "failed" and not run.every_failed):
                raise SystemExit(f"the unmutated suite did not run ({run.outcome}): {run.failed}")
            failing = list(run.every_failed)
            baseline_seconds = run.seconds
            print(
                f"baseline ran in {baseline_seconds:.0f}s; failing unmutated: {failing}", flush=True
            )
            if log is not None:
                with log.open("a") as handle:
                    record = {"baseline_seconds": baseline_seconds, "failing_unmutated": failing}
                    handle.write(json.dumps(record) + "\n")
        skip = [arg for test in failing for arg in ("--deselect", test)]
        results = []
        for mutation in mutations:
            result = try_mutation(tree, mutation, workers, named_only, skip)
            print(
                f"{mutation.id:>4} {result.outcome:<8} {result.stage:<5} {result.seconds:6.1f}s"
                f"  {mutation.promise}  [{result.by}]",
                flush=True,
            )
            results.append(result)
            if log is not None:
                with log.open("a") as handle:
                    handle.write(json.dumps(asdict(result)) + "\n")
        return results, baseline_seconds, failing
    finally:
        shutil.rmtree(work, ignore_errors=True)


def render(
    results: list[Result],
    baseline_seconds: float | None,
    *,
    postgres: bool,
    listed: int,
    failing: list[str] = (),
    note: str = "",
) -> str:
    by_id = {mutation.id: mutation for mutation in MUTATIONS}
    killed = sum(r.outcome == "killed" for r in results)
    in_suite = sum(r.stage == "suite" for r in results)
    total_seconds = sum(r.seconds for r in results)
    share = f"{100 * killed / len(results):.0f}%" if results else "n/a"
    lines = [
        "# Mutation probe",
        "",
        "```sh",
        "PRBOT_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test \\",
        "  uv run python benchmarks/mutation.py --write",
        "```",
        "",
        "Each row breaks one promise that README.md, SECURITY.md or docs/ state, in a temporary",
        "copy of the tree, by replacing source text found by its content (never a line number;",
        "a pattern gone or found twice stops the probe before anything runs). The suite then",
        "runs against the mutant with `-x`: first the test files most likely to catch it (one",
        "process), and only when those pass, every other test file (`-n 2 --dist loadfile`), so",
        "a kill is cheap and a survivor has passed the whole suite. *Killed by* names the first",
        "test that failed; *where* says whether the likely files or the rest of the suite",
        "caught it.",
        "Tests ran on SQLite and PostgreSQL."
        if postgres
        else "Tests ran on SQLite only (PRBOT_TEST_DATABASE_URL was not set).",
        "",
        f"**Killed: {killed} of {len(results)} ({share}).** {len(results)} of the "
        f"{listed} mutations on the list ran in this run. "
        + (
            f"The whole suite ran on the unmutated copy first, in {baseline_seconds:.0f} s. "
            if baseline_seconds is not None
            else "No baseline run of the whole suite this time. "
        )
        + f"The mutation runs took {total_seconds:.0f} s; {in_suite} of them needed the rest "
        "of the suite. Measured on the shared 2-core machine.",
        "",
    ]
    if failing:
        lines += [
            "These tests failed on the unmutated copy (broken on main when the run began, not by "
            "a mutation), so they were deselected from every mutation run: "
            + ", ".join(_short(t) for t in failing)
            + ".",
            "",
        ]
    if note:
        lines += [note, ""]
    lines += [
        "| Id | Promise | Mutation | Result | Killed by | Where | s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        mutation = by_id[r.id]
        change = "; ".join(
            f"{Path(e.path).name}: `{_cell(e.find)}` → `{_cell(e.replace)}`" for e in mutation.edits
        )
        by = _short(r.by) if r.by and "::" in r.by else (r.by or "")
        lines.append(
            f"| {r.id} | {_cell(mutation.promise)} | {change} | {r.outcome} | {by} | "
            f"{r.stage} | {r.seconds:.0f} |"
        )
    lines += [
        "",
        "Add a row for every new promise; re-target a pattern in `benchmarks/mutation.py` when",
        "a refactor moves it (`--check` says which ones no longer match).",
        "",
        "Left out on purpose, as no test can tell them from the original: deleting the quote",
        "skip or the inline-code cut in `commands.py` (the command pattern already refuses a",
        "line that starts with `>` or a backtick); the declared-length check before the",
        "Buildkite body streams and the size check before a tree file is read (the bounded",
        "read behind each refuses the same bodies and files; they save memory, not a promise).",
        "",
    ]
    return "\n".join(lines)


def _cell(text: str) -> str:
    flat = " ⏎ ".join(part.strip() for part in text.strip("\n").split("\n"))
    return flat.replace("|", "\\|")


def _short(test: str) -> str:
    file, _, name = test.partition("::")
    return f"`{Path(file).stem}{'::' + name if name else ''}`"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="+", metavar="ID", help="run these mutations only, in this order"
    )
    parser.add_argument("--check", action="store_true", help="check the patterns and stop")
    parser.add_argument("--write", action="store_true", help=f"rewrite {PAGE.relative_to(ROOT)}")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers for the suite")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    parser.add_argument(
        "--named-only",
        action="store_true",
        help="a quick look: the likely tests only (a survivor here proves nothing; no page)",
    )
    parser.add_argument("--log", type=Path, help="append each result to this JSON-lines file")
    parser.add_argument(
        "--page-from-log",
        type=Path,
        metavar="LOG",
        help="write the page from a --log file (a run cut short) and stop",
    )
    parser.add_argument("--note", default="", help="a sentence for the page (with --page-from-log)")
    args = parser.parse_args()
    postgres = bool(os.environ.get("PRBOT_TEST_DATABASE_URL"))
    if args.page_from_log:
        records = [json.loads(line) for line in args.page_from_log.read_text().splitlines() if line]
        head = next((r for r in records if "baseline_seconds" in r), {})
        results = [Result(**r) for r in records if "id" in r]
        PAGE.write_text(
            render(
                results,
                head.get("baseline_seconds"),
                postgres=postgres,
                listed=len(MUTATIONS),
                failing=head.get("failing_unmutated", []),
                note=args.note,
            )
        )
        print(f"wrote {PAGE.relative_to(ROOT)} from {len(results)} results")
        return 0
    chosen = MUTATIONS
    if args.only:
        unknown = set(args.only) - {mutation.id for mutation in MUTATIONS}
        if unknown:
            parser.error(f"unknown mutation ids: {', '.join(sorted(unknown))}")
        by_id = {mutation.id: mutation for mutation in MUTATIONS}
        chosen = tuple(by_id[i] for i in dict.fromkeys(args.only))  # in the order given
    check_patterns(ROOT, MUTATIONS)  # the whole list, whatever runs: a stale row is loud
    if args.check:
        print(f"{len(MUTATIONS)} mutations, every pattern matches once")
        return 0
    if args.named_only and args.write:
        parser.error("--named-only runs are not the page's figures")
    results, baseline_seconds, failing = probe(
        chosen,
        workers=args.workers,
        baseline=not (args.no_baseline or args.named_only),
        log=args.log,
        named_only=args.named_only,
    )
    killed = sum(r.outcome == "killed" for r in results)
    print(f"killed {killed}/{len(results)}")
    for r in results:
        if r.outcome == "survived":
            print(f"  survived: {r.id}")
    if args.write:
        PAGE.write_text(
            render(
                results, baseline_seconds, postgres=postgres, listed=len(MUTATIONS), failing=failing
            )
        )
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
