"""What ``prbot check`` does once it has a snapshot, for a checkout and a PR alike: the rules
(``--rules``, the repository's file, the built-in set it names or the tree matches), the
caches that outlive a run, the report printed, and the exit code ``--fail-on`` asks for."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from bot.checks import CheckContext
from bot.checks.base import STATUS_SEVERITY, MemoryCache, Status
from bot.cli.common import CliError, progress
from bot.local.sandbox import SandboxRunner
from bot.report import rules, runner
from bot.report.render import render_markdown
from bot.report.runner import LoadedRules

# --fail-on LEVEL: exit 1 when any section is at least this bad. `error` counts as failing:
# a check that could not run is never a pass.
FAILING = {
    "warn": {Status.WARN, Status.FAIL, Status.ERROR},
    "fail": {Status.FAIL, Status.ERROR},
}


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


def cli_data_dir() -> Path:
    """Where the CLI keeps what outlives a run: PRBOT_DATA_DIR, else ~/.cache/prbot."""
    return Path(os.environ.get("PRBOT_DATA_DIR", "").strip() or Path.home() / ".cache" / "prbot")


def result_cache(no_cache: bool):  # noqa: ANN201 - a bot.core.sections.Cache or None
    """uv resolutions kept between runs, as the service keeps them in its database."""
    if no_cache:
        return None, None
    from bot.store import db, state

    data_dir = cli_data_dir()
    data_dir.mkdir(parents=True, exist_ok=True)
    engine = db.make_engine(f"sqlite:///{data_dir.resolve() / 'check-cache.sqlite'}")
    db.migrate(engine)
    return state.StoreCache(engine), data_dir / "uv-cache"


def report_and_exit(
    args: argparse.Namespace, snapshot, loaded: LoadedRules, *, html_base: str | None = None
) -> int:  # noqa: ANN001 - a bot.core.snapshot.Snapshot
    """Run the checks on ``snapshot`` (closing it), print the report, and say how to exit."""
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
        print(render_markdown(report, html_base=html_base or "https://github.com"))
    if args.fail_on and any(s.status in FAILING[args.fail_on] for s in report.sections):
        worst = max(report.sections, key=lambda s: STATUS_SEVERITY[s.status])
        progress(f"--fail-on {args.fail_on}: {worst.check} is {worst.status}")
        return 1
    return 0
