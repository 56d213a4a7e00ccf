"""``prbot duplicates``: rank, for each PR of an export (or one), the other PRs in it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bot.cli.common import CliError, progress
from bot.core.markdown import code_span, escape_text
from bot.duplicates.clusters import clusters
from bot.duplicates.export import ExportError, index_from_records, load_export
from bot.duplicates.records import RecordProblem
from bot.duplicates.scoring import LIKELY_DUPLICATE, SWEEP_MIN_SCORE
from bot.report import rules, runner


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "duplicates", help="rank likely duplicate and overlapping PRs in a PR export"
    )
    parser.add_argument("--prs", required=True, help="PR export, one JSON record per line")
    parser.add_argument("--pr", type=int, help="only this PR (default: every PR in the file)")
    parser.add_argument("--top", type=int, default=5, help="candidates per PR (default: 5)")
    parser.add_argument("--format", choices=["markdown", "json"], default="markdown")
    parser.add_argument("--rules", help="rule file for thresholds and hot paths")
    parser.add_argument(
        "--min-score",
        type=float,
        default=SWEEP_MIN_SCORE,
        help=f"list candidates from this score (0..1) up; overlapping edits are listed "
        f"whatever their score (default: {SWEEP_MIN_SCORE})",
    )
    parser.set_defaults(func=run)


def _warn(problem: RecordProblem) -> None:
    print(f"prbot: warning: {problem}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise CliError("--top must be at least 1")
    if not 0.0 <= args.min_score <= 1.0:
        raise CliError("--min-score must be between 0 and 1")
    try:
        ruleset = runner.load_rules(None, rules_file=args.rules, strict=True).ruleset
    except rules.RulesError as exc:
        raise CliError(str(exc)) from None
    config = ruleset.checks.duplicates.scoring_config()
    config = type(config)(**{**config.__dict__, "min_score": args.min_score})
    try:
        records = load_export(args.prs, _warn)
    except ExportError as exc:
        raise CliError(str(exc)) from None
    index = index_from_records(records, open_only=False)
    if args.pr is not None and args.pr not in index:
        raise CliError(f"{args.prs}: no PR #{args.pr} in the export")
    numbers = [args.pr] if args.pr is not None else sorted(index.docs)
    progress(f"ranking {len(numbers)} of {len(index)} PRs")
    results: list[dict[str, Any]] = []
    titles = {n: f.title for n, f in index.docs.items()}
    for number in numbers:
        result = index.query(index.docs[number], config, top=args.top)
        entry: dict[str, Any] = {
            "number": number,
            "candidates": [c.to_json() for c in result.candidates],
        }
        if result.stacked:
            entry["stacked"] = result.stacked
        results.append(entry)
    if args.format == "json":
        print(json.dumps({"results": results}, indent=2))
    else:
        print(render_markdown(results, titles, single=args.pr is not None))
    return 0


def render_markdown(results: list[dict[str, Any]], titles: dict[int, str], single: bool) -> str:
    """Clusters of likely duplicates first (the sweep), then each PR's ranked candidates."""
    if not results:
        return "No PRs in the export."
    lines: list[str] = []
    pairs = [
        (r["number"], c["number"])
        for r in results
        for c in r["candidates"]
        if c["tier"] == LIKELY_DUPLICATE
    ]
    if not single:
        groups = clusters(pairs)
        lines.append(f"## Likely duplicate clusters ({len(groups)})\n")
        for group in groups:
            members = "; ".join(f"#{n} {escape_text(titles.get(n, ''))}" for n in group)
            lines.append(f"- {members}")
        if not groups:
            lines.append("No PRs look like the same work.")
        lines.append("\n## Candidates per PR\n")
    for r in results:
        if not r["candidates"] and not single:
            continue
        lines.append(f"### #{r['number']} {escape_text(titles.get(r['number'], ''))}\n")
        if not r["candidates"]:
            lines.append("No likely duplicates or overlapping work.\n")
        for c in r["candidates"]:
            evidence = "; ".join(_evidence_md(e) for e in c["evidence"])
            lines.append(
                f"- #{c['number']} {escape_text(titles.get(c['number'], ''))}: "
                f"{c['tier']} ({c['score']:.2f}) {evidence}"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _evidence_md(text: str) -> str:
    # Evidence strings mark code with backticks; keep those as code, escape the rest.
    parts = text.split("`")
    return "".join(code_span(part) if i % 2 else escape_text(part) for i, part in enumerate(parts))
