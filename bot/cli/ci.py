"""``prbot ci classify``: a Buildkite build's failures sorted as new, flaky, broken_trunk or
unknown against saved base-branch builds, by the code the server runs.

    prbot ci classify --head-build HEAD.json --history BUILDS.json [--format json|markdown]
                      [--rules FILE]

``HEAD.json`` is one build as ``GET …/builds/{number}?include_retried_jobs=true`` returns it;
``BUILDS.json`` the base branch's builds as ``GET …/builds?branch=<base>&include_retried_jobs=true``
lists them, newest first (one page, or several pages' lists concatenated into one list).
``--rules`` takes the thresholds from a rules file (``checks.jobs.ci_signal``, read as the
server reads ``.github/prbot.yml``, ``extends`` included); without it, the defaults.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bot.cli.common import CliError
from bot.core.markdown import escape_text
from bot.jobs.ci_history import MAX_HISTORY_BUILDS, History, read_history
from bot.jobs.ci_signal import (
    CLASSIFICATIONS,
    Classified,
    SignalRules,
    classify_build,
    counts_by_classification,
)
from bot.jobs.progress import safe_url
from bot.report import rules as rules_module
from bot.report import runner

# A saved listing of 10,000 vLLM builds with their jobs is far below this; a file over it
# is refused before it is parsed.
MAX_FILE_BYTES = 256_000_000


def _load(path: Path, what: str) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise CliError(
                f"{path}: {size / 1e6:.0f} MB, over the {MAX_FILE_BYTES / 1e6:.0f} MB limit "
                f"for {what}"
            )
        return json.loads(path.read_bytes())
    except OSError as exc:
        raise CliError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: {what} is not UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: {what} is not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise CliError(f"{path}: {what} is nested too deeply to read") from None


def _base_branch(head: dict[str, Any], given: str | None) -> str:
    if given:
        return given
    pull = head.get("pull_request")
    if isinstance(pull, dict) and isinstance(pull.get("base"), str) and pull["base"]:
        return pull["base"]
    return "main"


TITLES = {
    "new": "New failures",
    "unknown": "Unknown",
    "broken_trunk": "Broken trunk",
    "flaky": "Flaky",
}


def _link(text: str, url: str | None) -> str:
    shown = escape_text(text)
    return f"[{shown}]({url})" if safe_url(url) else str(shown)


def render_markdown(results: list[Classified], history: History) -> str:
    """The classifications grouped as the report groups them, new failures first."""
    counts = counts_by_classification(results)
    parts = [f"{counts[c]} {c}" for c in CLASSIFICATIONS if counts[c]]
    lines = [
        f"**{len(results)} failed job(s)**: {', '.join(parts) or 'none'}; "
        f"{len(history.builds)} build(s) of {escape_text(history.branch)} read.",
    ]
    for note in history.notes:
        lines.append(f"_{escape_text(note)}._")
    for classification in ("new", "unknown", "broken_trunk", "flaky"):
        group = [r for r in results if r.classification == classification]
        if not group:
            continue
        lines += ["", f"### {TITLES[classification]} ({len(group)})", ""]
        for r in group:
            job = _link(r.name, r.job_url)
            main = (
                f" · {_link('same step on ' + history.branch, r.base_job_url)}"
                if (safe_url(r.base_job_url))
                else ""
            )
            lines.append(f"- {job} ({escape_text(r.state)}){main}: {escape_text(r.reason)}")
    return "\n".join(lines) + "\n"


def signal_rules(args: argparse.Namespace) -> SignalRules:
    """The thresholds: the rules file's ``checks.jobs.ci_signal`` (the server's numbers), or
    the defaults; ``--max-builds`` over either."""
    thresholds = {}
    if args.rules is not None:
        try:
            ruleset = runner.load_rules(None, rules_file=args.rules, strict=True).ruleset
        except rules_module.RulesError as exc:
            raise CliError(str(exc)) from None
        thresholds = ruleset.checks.jobs.ci_signal.thresholds()
    if args.max_builds is not None:
        if not 1 <= args.max_builds <= MAX_HISTORY_BUILDS:
            raise CliError(f"--max-builds must be between 1 and {MAX_HISTORY_BUILDS}")
        thresholds["history_builds"] = args.max_builds
    return SignalRules(**thresholds)


def run(args: argparse.Namespace) -> int:
    rules = signal_rules(args)
    head = _load(args.head_build, "the head build")
    builds = _load(args.history, "the history")
    if not isinstance(head, dict):
        raise CliError(f"{args.head_build}: the head build is not one build object")
    if isinstance(builds, dict) and isinstance(builds.get("builds"), list):
        builds = builds["builds"]
    if not isinstance(builds, list):
        raise CliError(f"{args.history}: the history is not a list of builds")
    branch = _base_branch(head, args.branch)
    history = read_history(
        builds, branch, limit=rules.history_builds, exclude_commit=head.get("commit")
    )
    results = classify_build(head, history, rules, merge_base=args.merge_base)
    if args.format == "json":
        json.dump([r.to_json() for r in results], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_markdown(results, history))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    ci = subparsers.add_parser("ci", help="CI signal: sort a build's failures")
    commands = ci.add_subparsers(dest="ci_command", required=True, metavar="COMMAND")
    classify = commands.add_parser(
        "classify",
        help="sort a Buildkite build's failed jobs as new, flaky, broken_trunk or unknown",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    classify.add_argument("--head-build", type=Path, required=True, metavar="HEAD.json")
    classify.add_argument("--history", type=Path, required=True, metavar="BUILDS.json")
    classify.add_argument(
        "--branch", help="the base branch (default: the head build's pull_request.base, or main)"
    )
    classify.add_argument(
        "--merge-base",
        metavar="SHA",
        help="the PR's merge base: broken trunk is judged at or before its build",
    )
    classify.add_argument(
        "--rules",
        metavar="FILE",
        help="a rules file (.github/prbot.yml's format): its checks.jobs.ci_signal thresholds "
        "(default: the built-in defaults)",
    )
    classify.add_argument(
        "--max-builds",
        type=int,
        help=f"base builds read, newest first (default: the rules' history_builds, "
        f"{SignalRules.history_builds} unless set)",
    )
    classify.add_argument("--format", choices=("json", "markdown"), default="markdown")
    classify.set_defaults(func=run)
