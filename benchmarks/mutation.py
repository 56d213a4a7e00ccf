"""Mutation probe: does breaking each promise-bearing line make a test fail?

    uv run python benchmarks/mutation.py                 # every mutation, SQLite tests only
    uv run python benchmarks/mutation.py --write         # and rewrite its docs page
    uv run python benchmarks/mutation.py --only W1 P1    # some mutations
    uv run python benchmarks/mutation.py --check         # only check that every pattern matches
    PRBOT_TEST_DATABASE_URL=postgresql://... uv run python benchmarks/mutation.py  # + Postgres

Each mutation names the promise it breaks, the exact source text it replaces (found by
pattern, never by line number: other people edit these files) and the tests that should
catch it. The probe copies the working tree (tracked and untracked files, not the venv) to a
temporary directory, checks that the tests pass there unmutated, then applies one mutation
at a time, runs its tests with the project's interpreter and restores the file, whatever
happens. The working tree itself is never written. A pattern that no longer matches exactly
once stops the probe before anything runs: update the list.

A mutation is *killed* when its tests fail (or time out), *survived* when they pass. The
target is every mutation killed; a survivor is a promise no test holds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks" / "mutation.md"
RUN_TIMEOUT = 300.0  # seconds per mutation; a hang counts as killed, and is reported


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
        "bot/intake/server.py",
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
        "A timed-out sandbox kills the whole process group",
        "bot/local/sandbox.py",
        "os.killpg(proc.pid, signal.SIGKILL)",
        "proc.kill()",
        "tests/test_invariant_sandbox.py",
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
    problems = []
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


def run_tests(tree: Path, tests: tuple[str, ...] | list[str]) -> tuple[str, int, float, str]:
    """(outcome, exit code, seconds, last lines): outcome passed, failed or timeout."""
    argv = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    started = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            cwd=tree,
            env=environment(tree),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return "timeout", -1, time.monotonic() - started, ""
    tail = "\n".join(proc.stdout.strip().splitlines()[-3:])
    outcome = "passed" if proc.returncode == 0 else "failed"
    return outcome, proc.returncode, time.monotonic() - started, tail


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
    mutation: Mutation
    outcome: str  # killed | survived
    detail: str
    seconds: float


def probe(mutations: tuple[Mutation, ...], keep: bool = False) -> tuple[list[Result], float]:
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
        every_test = sorted({t for mutation in mutations for t in mutation.tests})
        print(f"baseline: {len(every_test)} test selections on the unmutated copy", flush=True)
        outcome, code, baseline_seconds, tail = run_tests(tree, every_test)
        if outcome != "passed":
            raise SystemExit(f"the unmutated tests do not pass ({outcome}, {code}):\n{tail}")
        results = []
        for mutation in mutations:
            originals = apply(tree, mutation)
            try:
                outcome, code, seconds, tail = run_tests(tree, mutation.tests)
            finally:
                restore(originals)
            if outcome == "passed":
                result = Result(
                    mutation, "survived", tail.splitlines()[-1] if tail else "", seconds
                )
            elif outcome == "timeout":
                result = Result(mutation, "killed", f"timed out after {RUN_TIMEOUT:.0f}s", seconds)
            else:
                last = tail.splitlines()[-1] if tail else f"exit {code}"
                result = Result(mutation, "killed", last, seconds)
            print(
                f"{mutation.id:>3} {result.outcome:<8} {seconds:6.1f}s  {mutation.promise}",
                flush=True,
            )
            results.append(result)
        return results, baseline_seconds
    finally:
        if keep:
            print(f"copy kept at {tree}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def render(results: list[Result], baseline_seconds: float, postgres: bool) -> str:
    killed = sum(r.outcome == "killed" for r in results)
    total_seconds = sum(r.seconds for r in results)
    lines = [
        "# Mutation probe",
        "",
        "```sh",
        "uv run python benchmarks/mutation.py --write",
        "```",
        "",
        "Each row breaks one promise-bearing line (found by its exact text, not its line number)",
        "in a temporary copy of the tree and runs only the tests named for it. *Killed*: the",
        "tests failed, so the promise is held by a test. *Survived*: they still passed.",
        "Tests ran on SQLite and PostgreSQL."
        if postgres
        else "Tests ran on SQLite only (set PRBOT_TEST_DATABASE_URL for Postgres too).",
        "",
        f"**Kill rate: {killed}/{len(results)} ({100 * killed / len(results):.0f}%).** "
        f"Baseline (every selected test, unmutated): {baseline_seconds:.0f} s; "
        f"the {len(results)} mutation runs: {total_seconds:.0f} s "
        f"({total_seconds / max(baseline_seconds, 1e-9):.1f}× the baseline), "
        "on the shared 2-core machine.",
        "",
        "| Id | Module | Promise | Mutation | Result | Tests | s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        mutation = r.mutation
        modules = ", ".join(sorted({Path(e.path).name for e in mutation.edits}))
        change = "; ".join(f"`{_cell(e.find)}` → `{_cell(e.replace)}`" for e in mutation.edits)
        tests = ", ".join(_short(t) for t in mutation.tests)
        lines.append(
            f"| {mutation.id} | {modules} | {mutation.promise} | {change} | "
            f"{r.outcome} | {tests} | {r.seconds:.0f} |"
        )
    lines += [
        "",
        'A pattern that no longer matches stops the probe with "pattern not found: update the',
        'list"; re-target it in `benchmarks/mutation.py` after a refactor. Add a row for every',
        "new promise (job dispatch idempotence, per-SHA approval when they land).",
        "",
        "Left out on purpose: deleting the quote skip or the inline-code cut in `commands.py`.",
        "No comment tells those mutants apart from the original (the command pattern already",
        "refuses a line that starts with `>` or a backtick), so no test can kill them.",
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
    parser.add_argument("--only", nargs="+", metavar="ID", help="run these mutations only")
    parser.add_argument("--check", action="store_true", help="check the patterns and stop")
    parser.add_argument("--write", action="store_true", help=f"rewrite {PAGE.relative_to(ROOT)}")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args()
    chosen = MUTATIONS
    if args.only:
        unknown = set(args.only) - {mutation.id for mutation in MUTATIONS}
        if unknown:
            parser.error(f"unknown mutation ids: {', '.join(sorted(unknown))}")
        chosen = tuple(mutation for mutation in MUTATIONS if mutation.id in args.only)
    if args.check:
        check_patterns(ROOT, chosen)
        print(f"{len(chosen)} mutations, every pattern matches once")
        return 0
    results, baseline_seconds = probe(chosen, keep=args.keep)
    killed = sum(r.outcome == "killed" for r in results)
    print(f"killed {killed}/{len(results)}")
    for r in results:
        if r.outcome == "survived":
            print(f"  survived: {r.mutation.id} {r.mutation.promise}")
    if args.write:
        postgres = bool(os.environ.get("PRBOT_TEST_DATABASE_URL"))
        PAGE.write_text(render(results, baseline_seconds, postgres))
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
