"""``prbot check``: the whole pipeline on a local checkout, printed."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bot import rules
from bot.checks import CheckContext
from bot.cli.common import CliError, step
from bot.gitrepo import GitError
from bot.report import build_report, render_markdown
from bot.sandbox import SandboxRunner
from bot.snapshot import snapshot_from_checkout


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check", help="run every check on BASE..HEAD of a checkout")
    parser.add_argument("--repo", required=True, help="path to a git checkout")
    parser.add_argument("--base", required=True, help="base revision")
    parser.add_argument("--head", required=True, help="head revision")
    parser.add_argument(
        "--rules",
        help="rule file (default: the repo's .github/prbot.yml at "
        "base, else the built-in defaults)",
    )
    parser.add_argument(
        "--default-rules",
        default="default",
        help="built-in rule set under the repo's file (default: default)",
    )
    parser.add_argument("--open-prs", help="PR export (JSONL) to audit duplicates against")
    parser.add_argument("--format", choices=["markdown", "json"], default="markdown")
    parser.set_defaults(func=run)


def load_rules(args: argparse.Namespace, snapshot) -> object:
    try:
        if args.rules:
            return rules.load_file(args.rules)
        return rules.for_repository(
            snapshot.base.read_text(rules.REPO_RULES_PATH), default=args.default_rules
        )
    except rules.RulesError as exc:
        raise CliError(str(exc)) from None


def open_prs_from_file(path: str):
    """The open-PR source the duplicates check reads, built from a PR export."""
    from bot.duplicates.export import ExportError, load_index_from_export

    try:
        return load_index_from_export(path)
    except ExportError as exc:
        raise CliError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    repo = Path(args.repo)
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise CliError(f"{repo}: not a git checkout")
    try:
        with step("reading the diff"):
            snapshot = snapshot_from_checkout(repo, args.base, args.head)
    except GitError as exc:
        raise CliError(str(exc)) from None
    ruleset = load_rules(args, snapshot)
    with tempfile.TemporaryDirectory(prefix="prbot-check-") as work:
        context = CheckContext(work_dir=Path(work), runner=SandboxRunner())
        if args.open_prs:
            context.open_prs = open_prs_from_file(args.open_prs)
        with step("running checks"):
            report = build_report(snapshot, ruleset, context)
    if args.format == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render_markdown(report))
    return 0
