"""``prbot check``: the whole pipeline on a local checkout, printed."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from bot import rules, runner
from bot.checks import CheckContext
from bot.checks.base import STATUS_SEVERITY, MemoryCache, Status
from bot.cli.common import CliError, progress, step
from bot.gitrepo import GitError, resolve, run_git
from bot.report import render_markdown
from bot.runner import LoadedRules
from bot.sandbox import SandboxRunner
from bot.snapshot import GitTree, snapshot_from_checkout

EXAMPLES = """\
examples:
  prbot check --repo . --base origin/main --head HEAD
  prbot check --repo ~/vllm --base v0.20.2 --head v0.21.0 --format json --fail-on fail
  prbot check --repo . --base main --head HEAD --open-prs prs.jsonl   # with duplicates
"""

# --fail-on LEVEL: exit 1 when any section is at least this bad. `error` counts as failing:
# a check that could not run is never a pass.
FAILING = {
    "warn": {Status.WARN, Status.FAIL, Status.ERROR},
    "fail": {Status.FAIL, Status.ERROR},
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="run every check on BASE..HEAD of a checkout",
        description="Run every check on BASE..HEAD of a local git checkout and print the "
        "report. Exits 0 when a report was produced, whatever it found (see --fail-on).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--repo", required=True, help="a git checkout (any directory inside one works)"
    )
    parser.add_argument("--base", required=True, help="base revision (branch, tag or SHA)")
    parser.add_argument("--head", required=True, help="head revision (branch, tag or SHA)")
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


def default_rules_name(args: argparse.Namespace, base) -> str:  # noqa: ANN001 - a TreeReader
    """--default-rules, else PRBOT_DEFAULT_RULES, else the built-in set the tree matches."""
    known = rules.builtin_names()
    for given, source in (
        (args.default_rules, "--default-rules"),
        (os.environ.get("PRBOT_DEFAULT_RULES", "").strip() or None, "PRBOT_DEFAULT_RULES"),
    ):
        if given is not None:
            if given not in known:
                raise CliError(
                    f"{source}: no built-in rule set {given!r} (built in: {', '.join(known)})"
                )
            return given
    detected = rules.detect_builtin(lambda path: base.exists(path))
    if detected:
        progress(f"using the built-in {detected!r} rules: the tree looks like one of theirs")
        return detected
    return "default"


def load_rules(args: argparse.Namespace, base) -> LoadedRules:  # noqa: ANN001 - a TreeReader
    """--rules FILE, else the checkout's .github/prbot.yml at base over the built-in set;
    a bad file is the CLI's one error line."""
    try:
        return runner.load_rules(
            base.read_text(rules.REPO_RULES_PATH),
            default=default_rules_name(args, base),
            rules_file=args.rules,
            strict=True,
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


def result_cache(no_cache: bool):  # noqa: ANN201 - a bot.check_types.Cache or None
    """uv resolutions kept between runs, as the service keeps them in its database."""
    if no_cache:
        return None, None
    from bot.store import db, state

    data_dir = Path(
        os.environ.get("PRBOT_DATA_DIR", "").strip() or Path.home() / ".cache" / "prbot"
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    engine = db.make_engine(f"sqlite:///{data_dir.resolve() / 'check-cache.sqlite'}")
    db.migrate(engine)
    return state.StoreCache(engine), data_dir / "uv-cache"


def run(args: argparse.Namespace) -> int:
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
    cache, uv_cache_dir = result_cache(args.no_cache)
    open_prs = open_prs_from_file(args.open_prs) if args.open_prs else None
    with tempfile.TemporaryDirectory(prefix="prbot-check-") as work:
        context = CheckContext(
            work_dir=Path(work),
            cache=cache if cache is not None else MemoryCache(),
            open_prs=open_prs,
            runner=SandboxRunner(),
            uv_cache_dir=uv_cache_dir,
        )
        try:
            report = runner.build_report(
                snapshot, loaded, context, progress=lambda check: progress(f"{check.title}…")
            )
        finally:
            snapshot.close()
    if args.format == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render_markdown(report))
    if args.fail_on and any(s.status in FAILING[args.fail_on] for s in report.sections):
        worst = max(report.sections, key=lambda s: STATUS_SEVERITY[s.status])
        progress(f"--fail-on {args.fail_on}: {worst.check} is {worst.status}")
        return 1
    return 0
