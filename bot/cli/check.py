"""``prbot check``: the whole pipeline on a local checkout, printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.cli.check_pr import check_pull_request
from bot.cli.check_report import FAILING, load_rules, report_and_exit
from bot.cli.common import CliError, step
from bot.core.snapshot import GitTree, snapshot_from_checkout
from bot.local.git import GitError, resolve, run_git
from bot.report import rules, runner

EXAMPLES = """\
examples:
  prbot check --repo . --base origin/main --head HEAD
  GITHUB_TOKEN=... prbot check --pr vllm-project/vllm#12345   # or the PR's URL
  prbot check --repo ~/vllm --base v0.20.2 --head v0.21.0 --format json --fail-on fail
  prbot check --repo . --base main --head HEAD --open-prs prs.jsonl   # with duplicates
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="run every check on BASE..HEAD of a checkout, or on a PR (--pr)",
        description="Run every check on BASE..HEAD of a local git checkout and print the "
        "report. Exits 0 when a report was produced, whatever it found (see --fail-on).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repo", help="a git checkout (any directory inside one works)")
    parser.add_argument("--base", help="base revision (branch, tag or SHA)")
    parser.add_argument("--head", help="head revision (branch, tag or SHA)")
    parser.add_argument(
        "--pr",
        metavar="OWNER/REPO#N",
        help="instead of --repo/--base/--head: fetch this pull request (or its URL) into a "
        "local mirror and check it as the service would; the token comes from GITHUB_TOKEN "
        "or GH_TOKEN, the API from PRBOT_GITHUB_API_URL, and trust from the author's "
        "association with the repository",
    )
    parser.add_argument(
        "--rules",
        help="rule file (default: the repo's .github/prbot.yml at base over the built-in set)",
    )
    parser.add_argument(
        "--default-rules",
        default=None,
        metavar="NAME",
        help="built-in rule set under the repo's file (default: PRBOT_DEFAULT_RULES, else the "
        f"set the tree matches, else default; built in: {', '.join(rules.builtin_names())})",
    )
    parser.add_argument(
        "--open-prs", metavar="FILE", help="PR export (JSONL) to audit duplicates against"
    )
    parser.add_argument(
        "--format", choices=["markdown", "json"], default="markdown", help="output format"
    )
    parser.add_argument(
        "--fail-on",
        choices=sorted(FAILING),
        default=None,
        help="exit 1 when any section is at this level or worse (error counts as fail)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not reuse uv resolutions from earlier runs "
        "(kept in PRBOT_DATA_DIR, else ~/.cache/prbot)",
    )
    parser.set_defaults(func=run)


def checkout_root(path: Path) -> Path:
    """The top of the checkout that contains ``path`` (so a subdirectory works)."""
    if not path.is_dir():
        raise CliError(f"--repo: {path} is not a directory")
    try:
        top = run_git(path, ["rev-parse", "--show-toplevel"]).decode().strip()
    except GitError:
        if (path / "HEAD").exists() and (path / "objects").is_dir():
            return path.resolve()  # a bare repository
        raise CliError(f"--repo: {path} is not inside a git checkout") from None
    return Path(top)


def resolve_revision(repo: Path, option: str, revision: str) -> None:
    try:
        resolve(repo, revision)
    except GitError:
        raise CliError(f"{option}: no commit {revision!r} in {repo}") from None


def run(args: argparse.Namespace) -> int:
    if args.pr is not None:
        if args.repo or args.base or args.head:
            raise CliError(
                "--pr takes the place of --repo, --base and --head; give one or the other"
            )
        return check_pull_request(args)
    missing = [name for name in ("repo", "base", "head") if not getattr(args, name)]
    if missing:
        raise CliError(
            f"give --repo, --base and --head (missing: {', '.join('--' + m for m in missing)}), "
            "or --pr OWNER/REPO#N"
        )
    repo = checkout_root(Path(args.repo).expanduser())
    resolve_revision(repo, "--base", args.base)
    resolve_revision(repo, "--head", args.head)
    # The rules come from the base tree, before the snapshot, so that the snapshot is built
    # with its trust already decided: the person running this owns the checkout.
    base_tree = GitTree(repo, resolve(repo, args.base))
    try:
        loaded = load_rules(args, base_tree)
    finally:
        base_tree.close()
    try:
        with step("reading the diff"):
            snapshot = snapshot_from_checkout(
                repo, args.base, args.head, trusted=runner.decide_trust(None, None, local=True)
            )
    except GitError as exc:
        raise CliError(str(exc)) from None
    return report_and_exit(args, snapshot, loaded)
