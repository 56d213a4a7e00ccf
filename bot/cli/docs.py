"""``prbot docs``: check or regenerate the generated docs of a working directory."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bot.checks.generated_docs import summarize
from bot.cli.check_report import default_rules_name
from bot.cli.common import CliError, progress
from bot.core.snapshot import DirTree
from bot.gendocs.config import GeneratedDocsRules
from bot.gendocs.doc_check import DocResult
from bot.gendocs.hooks import HookResult
from bot.gendocs.suite import check_docs, run_hooks
from bot.local.sandbox import SandboxRunner
from bot.report import rules, runner


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "docs", help="check (or rewrite) generated docs against their source"
    )
    parser.add_argument("--repo", required=True, help="path to the repository's working tree")
    parser.add_argument(
        "--rules",
        help="rule file (default: the repo's .github/prbot.yml, else the built-in defaults)",
    )
    parser.add_argument(
        "--default-rules",
        default=None,
        help="built-in rule set under the repo's file (default: PRBOT_DEFAULT_RULES, else the "
        "set whose detect paths the tree has, as prbot check chooses)",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--check",
        action="store_true",
        help="exit 0 in sync, 1 when a doc has drifted, 3 when a doc could not be verified",
    )
    mode.add_argument("--write", action="store_true", help="rewrite drifted tables in place")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument(
        "--no-hooks",
        action="store_true",
        help="run none of the repository's generators (hooks, doc generators): they run its "
        "code; docs are then checked with prbot's own extractor",
    )
    parser.set_defaults(func=run)


def load_rules(args: argparse.Namespace, tree: DirTree) -> GeneratedDocsRules:
    try:
        loaded = runner.load_rules(
            tree.read_text(rules.REPO_RULES_PATH),
            # The same choice as `prbot check`: a vLLM tree gets the vllm rules.
            default=default_rules_name(args, tree),
            rules_file=args.rules,
            strict=True,
        )
    except rules.RulesError as exc:
        raise CliError(str(exc)) from None
    return loaded.ruleset.checks.generated_docs


def collect(
    tree: DirTree, doc_rules: GeneratedDocsRules, *, hooks: bool, work_dir: Path
) -> tuple[list[DocResult], list[HookResult]]:
    """Check every configured doc that exists in the tree, and run every hook."""
    runner = SandboxRunner() if hooks else None
    docs: list[DocResult] = []
    for outcome in check_docs(doc_rules, tree, runner=runner, work_dir=work_dir):
        if outcome.problem is not None:
            raise CliError(f"{outcome.rule.path}: {outcome.problem}")
        if outcome.result is not None:
            docs.append(outcome.result)
    outputs: list[HookResult] = []
    if runner is not None:
        outputs = run_hooks(
            doc_rules,
            tree,
            runner=runner,
            work_dir=work_dir,
            announce=lambda hook: progress(f"running hook {hook.name}: {' '.join(hook.command)}"),
        )
    return docs, outputs


def write_fixes(tree: DirTree, docs: list[DocResult], outputs: list[HookResult]) -> list[str]:
    """Rewrite drifted tables and regenerated files in place; the paths written."""
    written = []
    for result in docs:
        if result.mode != "committed" or result.expected_text is None:
            continue
        if result.errors:
            raise CliError(f"cannot rewrite {result.path}: {result.errors[0]}")
        if result.expected_text != result.actual_text:
            (tree.root / result.path).write_text(result.expected_text, encoding="utf-8")
            written.append(result.path)
    for output in outputs:
        if output.generated is not None and output.generated != output.committed:
            target = tree.root / output.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(output.generated)
            written.append(output.path)
    return written


def cell_lines(cells: list[dict[str, Any]]) -> list[str]:
    """One line per differing cell; a whole missing or unexpected row is one line."""
    # In first-seen order: a single cell, or the key of a whole row gathering its cells.
    entries: list[dict[str, Any] | tuple[str, str, str]] = []
    rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for cell in cells:
        if cell["kind"] not in ("missing_row", "extra_row"):
            entries.append(cell)
            continue
        key = (cell["kind"], cell["table"], cell["row"])
        if key not in rows:
            rows[key] = []
            entries.append(key)
        rows[key].append(cell)
    lines = []
    for entry in entries:
        if isinstance(entry, dict):
            lines.append(
                f"{entry['table']} | {entry['row']} | {entry['column']}: "
                f"expected {entry['expected']!r}, found {entry['actual']!r}"
            )
            continue
        kind, table, row = entry
        side = "expected" if kind == "missing_row" else "actual"
        values = "; ".join(f"{c['column']}: {c[side]}" for c in rows[entry] if c[side])
        what = "row missing" if kind == "missing_row" else "row not expected"
        lines.append(f"{table} | {row}: {what} ({values})")
    return lines


def print_text(findings: list[dict[str, Any]], written: Iterable[str] = ()) -> None:
    rewritten = set(written)
    for finding in findings:
        drift = finding["cells"] or finding.get("manual_edits")
        state = "in sync" if finding["in_sync"] else "OUT OF SYNC" if drift else "NOT VERIFIED"
        if finding["path"] in rewritten:
            # Never "in sync" for a file this run changed: it was not, until now.
            state = "rewritten" if finding["in_sync"] else f"rewritten, still {state}"
        print(f"{finding['path']}: {state}")
        for line in cell_lines(finding["cells"]):
            print(f"  {line}")
        for edit in finding.get("manual_edits") or []:
            print(f"  line {edit['line']}: edited by hand: {edit['after']!r}")
        for problem in finding["problems"]:
            where = f"{problem['path']}:{problem['line']}" if problem["line"] else problem["path"]
            print(f"  {problem['severity']}: {where}: {problem['message']}")
        for note in finding.get("notes") or []:
            print(f"  note: {note}")
        if not finding["in_sync"] and finding.get("fix_command") and finding["cells"]:
            print(f"  fix: {finding['fix_command']}")


def run(args: argparse.Namespace) -> int:
    root = Path(args.repo)
    if not root.is_dir():
        raise CliError(f"{root}: not a directory")
    tree = DirTree(root)
    doc_rules = load_rules(args, tree)
    if not doc_rules.enabled:
        raise CliError("the generated_docs check is disabled by the rules")
    with tempfile.TemporaryDirectory(prefix="prbot-docs-") as work:
        docs, outputs = collect(tree, doc_rules, hooks=not args.no_hooks, work_dir=Path(work))
        if not docs and not outputs:
            configured = ", ".join(d.path for d in doc_rules.docs) or "none"
            raise CliError(f"no generated doc found in {root} (configured: {configured})")
        written: list[str] = []
        if args.write:
            written = write_fixes(tree, docs, outputs)
            for path in written:
                progress(f"rewrote {path}")
            if written:  # read back what was written, so the report says what is there now
                docs, outputs = collect(
                    tree, doc_rules, hooks=not args.no_hooks, work_dir=Path(work)
                )
    findings = [r.to_json() for r in docs] + [r.to_json() for r in outputs]
    if args.format == "json":
        status, summary = summarize(findings)
        report = {
            "status": str(status),
            "summary": summary,
            "findings": findings,
            "rewritten": written,
        }
        print(json.dumps(report, indent=2))
    else:
        print_text(findings, written)
    sys.stdout.flush()
    return exit_code(findings)


# `prbot docs --check` exit codes (README "Command line"); 2 is a usage error (CliError).
IN_SYNC, DRIFT, NOT_VERIFIED = 0, 1, 3


def exit_code(findings: list[dict[str, Any]]) -> int:
    """0 all in sync; 1 some doc drifted (whatever else); 3 none drifted, some not verified."""
    if any(f["cells"] or f.get("manual_edits") for f in findings):
        return DRIFT
    return IN_SYNC if all(f["in_sync"] for f in findings) else NOT_VERIFIED
