"""The review patterns on real vLLM release diffs: counts, hand-checked verdicts, time.

Run by hand (never in CI):

    PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_review.py \
        [VERSION ...] [--write]

Every consecutive pair of the given releases (default: those in ``DEFAULT_VERSIONS``) is
diffed with ``benchmarks/vllm_releases.py`` ``pair(a, b)`` and the ``review`` check (rules
``vllm``) runs on the changed files under ``vllm/v1/attention/`` and
``vllm/model_executor/layers/``. Reported: flags per pattern; every flag next to the verdict
written by hand in ``benchmarks/real_review_verdicts.yaml`` (a flag with no verdict there is
shown as unchecked); the time per PR-sized diff (five changed files), as a ratio against
parsing the same head files with ``ast.parse`` in the same run; and the TOKENSPEED_MLA case
(0.20.2 → 0.21.0). Nothing from the trees is written into the repository.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.vllm_releases import pair, tree, version_key  # noqa: E402
from bot.checks.base import CheckContext  # noqa: E402
from bot.checks.review import run as run_review  # noqa: E402
from bot.core.globs import path_matches
from bot.core.snapshot import Snapshot, snapshot_from_checkout  # noqa: E402
from bot.report import rules as rules_module  # noqa: E402
from bot.review.engine import PATTERNS, review_files  # noqa: E402
from bot.review.optional_import import declared_distributions  # noqa: E402

DEFAULT_VERSIONS = [
    "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.20.2", "0.21.0", "0.22.0", "0.23.0", "0.24.0",
    "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
]  # fmt: skip
PREFIXES = ("vllm/v1/attention/", "vllm/model_executor/layers/")
PR_SIZE = 5  # changed files per PR-sized diff (a typical kernel-backend PR touches 3-8)
TOKENSPEED = (
    "vllm/v1/attention/backends/mla/tokenspeed_mla.py",
    "vllm/v1/attention/backends/mla/prefill/tokenspeed_mla.py",
)
TOKENSPEED_EXPECTED = ("lazy-cache", "capability-contradiction", "literal-dimensions")
# Points the maintainer found false on TOKENSPEED_MLA: each must stay absent.
TOKENSPEED_ABSENT = ("silent-optional-import", "unbounded-cache")
VERDICTS = Path(__file__).with_name("real_review_verdicts.yaml")
OUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "real_review.md"
# Written by hand from docs/benchmarks/maintainer_audit.md (benchmarks/maintainer_audit.py).
SECOND_JUDGE = (
    "Second judge: a maintainer's audit of the full report on five real vLLM changes ([ma"
    "intainer_audit.md](maintainer_audit.md)) judged the review points shown there before"
    " reading `benchmarks/real_review_verdicts.yaml` and agrees on 5 of 5 distinct points"
    " (all warranted); on 0.27.1..0.33.0 it found the two `literal-dimensions` points the"
    " 300-file limit had hidden (hot paths were read in path order; fixed in `0147512`)."
)


def _restricted(snapshot: Snapshot, prefixes: tuple[str, ...] = PREFIXES) -> Snapshot:
    snapshot = dataclasses.replace(
        snapshot, files=[f for f in snapshot.files if f.path.startswith(prefixes)]
    )
    return snapshot


def _elsewhere(snapshot: Snapshot, changed: list) -> Snapshot:
    """The rest of ``vllm/`` in the same diff: more flags for the hand-checked sample."""
    rest = [f for f in changed if f.path.startswith("vllm/") and not f.path.startswith(PREFIXES)]
    return Snapshot(
        snapshot.repo, snapshot.base_sha, snapshot.head_sha, snapshot.base, snapshot.head,
        files=rest,
    )  # fmt: skip


def _verdicts() -> dict[tuple[str, str, str], dict]:
    if not VERDICTS.exists():
        return {}
    entries = yaml.safe_load(VERDICTS.read_text()) or []
    return {(e["path"], e["pattern"], e["snippet"]): e for e in entries}


def _time_chunks(snapshot: Snapshot, rules, context: CheckContext) -> list[dict]:
    """The check on PR-sized slices of the diff, beside ``ast.parse`` of the same files."""
    python = [f for f in snapshot.files if f.path.endswith(".py") and f.status != "removed"]
    out = []
    for start in range(0, len(python), PR_SIZE):
        chunk = python[start : start + PR_SIZE]
        texts = [snapshot.head.read_text(f.path) or "" for f in chunk]  # warm the blob reader
        began = time.perf_counter()
        for path, text in zip((f.path for f in chunk), texts, strict=True):
            try:
                ast.parse(text, filename=path)
            except SyntaxError:
                pass
        parse_seconds = time.perf_counter() - began
        sliced = Snapshot(
            snapshot.repo, snapshot.base_sha, snapshot.head_sha, snapshot.base, snapshot.head,
            files=chunk,
        )  # fmt: skip
        began = time.perf_counter()
        run_review(sliced, rules, context)
        review_seconds = time.perf_counter() - began
        out.append(
            {"files": len(chunk), "parse": parse_seconds, "review": review_seconds,
             "lines": sum(t.count("\n") for t in texts)}
        )  # fmt: skip
    return out


def _tokenspeed(rules, work: Path) -> dict:
    """TOKENSPEED_MLA's two files at 0.21.0 against 0.20.2, and the same without the
    requirement line 0.21.0 added (the dependency as the base declared it)."""
    repo = pair("0.20.2", "0.21.0")
    snapshot = _restricted(snapshot_from_checkout(repo, "base", "head", trusted=True), TOKENSPEED)
    section = run_review(snapshot, rules, CheckContext(work_dir=work))
    requirement_globs = rules.silent_optional_import.requirement_files
    base_requirements = {
        p: snapshot.base.read_text(p) or ""
        for p in snapshot.base.list_paths()
        if any(path_matches(p, g) for g in requirement_globs)
    }
    files = []
    for changed in snapshot.files:
        text = snapshot.head.read_text(changed.path)
        files.append((changed.path, text, [n for n, _ in changed.added_lines()]))
    undeclared = review_files(files, rules, declared_distributions(base_requirements))
    head_text = snapshot.head.read_text("requirements/cuda.txt") or ""
    declared_at = [
        f"requirements/cuda.txt:{n}"
        for n, line in enumerate(head_text.splitlines(), 1)
        if line.strip().startswith("tokenspeed")
    ]
    snapshot.close()
    return {
        "findings": section.findings,
        "base_declared_findings": undeclared.findings(),
        "declared_at": declared_at,
    }


def _tree_scan(version: str, rules) -> list[dict]:
    """Every line of ``vllm/`` at one release, as if a PR had just added it: more flags
    for the hand-checked sample than the release diffs give (the patterns are rare)."""
    root = tree(version)
    sources = []
    for path in sorted((root / "vllm").rglob("*.py")):
        text = path.read_text(errors="replace")
        sources.append((str(path.relative_to(root)), text, range(1, text.count("\n") + 2)))
    globs = rules.silent_optional_import.requirement_files
    requirement_texts = {
        str(p.relative_to(root)): p.read_text(errors="replace")
        for p in root.rglob("*")
        if p.is_file() and any(path_matches(str(p.relative_to(root)), g) for g in globs)
    }
    wide = rules.model_copy(update={"max_files": 100_000})
    found = review_files(sources, wide, declared_distributions(requirement_texts))
    return [{**f, "pair": version, "scope": "tree"} for f in found.findings()]


def _count(flags: list[dict], scope: str) -> dict[str, int]:
    return dict(Counter(f["pattern"] for f in flags if f["scope"] == scope))


def run(versions: list[str]) -> dict:
    ruleset = rules_module.load_builtin("vllm")
    rules = ruleset.checks.review
    versions = sorted(versions, key=version_key)
    verdicts = _verdicts()
    # A release diff of all of vllm/ is thousands of files, not a PR: no file limit there.
    wide = rules.model_copy(update={"max_files": 100_000})
    work = Path("/tmp/prbot-real-review")
    work.mkdir(exist_ok=True)
    context = CheckContext(work_dir=work)
    pairs, flags, chunks = [], [], []
    for base, head in zip(versions, versions[1:], strict=False):
        repo = pair(base, head)
        snapshot = snapshot_from_checkout(repo, "base", "head", trusted=True)
        changed = list(snapshot.files)
        snapshot = _restricted(snapshot)  # (was discarded: the whole diff was reviewed)
        began = time.perf_counter()
        section = run_review(snapshot, rules, context)
        whole = time.perf_counter() - began
        elsewhere = run_review(_elsewhere(snapshot, changed), wide, context)
        python = [f for f in snapshot.files if f.path.endswith(".py") and f.status != "removed"]
        pairs.append(
            {"pair": f"{base}..{head}", "files": len(python),
             "added_lines": sum(f.additions for f in python), "seconds": whole,
             "status": str(section.status), "flags": len(section.findings)}
        )  # fmt: skip
        for scope, found in (("restricted", section.findings), ("elsewhere", elsewhere.findings)):
            for finding in found:
                key = (finding["path"], finding["pattern"], finding["snippet"])
                verdict = verdicts.get(key, {})
                flags.append(
                    {**finding, "pair": f"{base}..{head}", "scope": scope,
                     "verdict": verdict.get("verdict", "unchecked"),
                     "note": verdict.get("note", "")}
                )  # fmt: skip
        chunks += _time_chunks(snapshot, rules, context)
        snapshot.close()
    newest = versions[-1]
    for flag in _tree_scan(newest, rules):
        verdict = verdicts.get((flag["path"], flag["pattern"], flag["snippet"]), {})
        flag.update(verdict=verdict.get("verdict", "unchecked"), note=verdict.get("note", ""))
        flags.append(flag)
    return {
        "versions": versions,
        "pairs": pairs,
        "flags": flags,
        "counts": _count(flags, "restricted"),
        "elsewhere_counts": _count(flags, "elsewhere"),
        "tree_counts": _count(flags, "tree"),
        "tree_version": newest,
        "chunks": chunks,
        "tokenspeed": _tokenspeed(rules, work) if {"0.20.2", "0.21.0"} <= set(versions) else None,
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def render(result: dict) -> str:
    lines = [
        "# Review points on real vLLM release diffs",
        "",
        "```sh",
        "PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_review.py "
        + " ".join(result["versions"])
        + " --write",
        "```",
        "",
        "The `review` check (rules `vllm`) on every consecutive release pair's diff, restricted "
        f"to {', '.join(f'`{p}`' for p in PREFIXES)}. Trees are vLLM's PyPI sdists, downloaded on "
        "demand and never committed. Verdicts are by hand, in "
        "`benchmarks/real_review_verdicts.yaml`.",
        "",
        "## Flags per pattern",
        "",
        f"| Pattern | Release diffs, {' and '.join(f'`{p}`' for p in PREFIXES)} | "
        "Release diffs, the rest of `vllm/` | "
        f"All of `vllm/` at {result['tree_version']}, every line as if added |",
        "| --- | --- | --- | --- |",
    ]
    for pattern in PATTERNS + ("not-reviewed",):
        lines.append(
            f"| `{pattern}` | {result['counts'].get(pattern, 0)} | "
            f"{result['elsewhere_counts'].get(pattern, 0)} | "
            f"{result['tree_counts'].get(pattern, 0)} |"
        )
    lines += [
        "",
        "The first column is the measurement the issue asks for; the patterns are rare in "
        "release diffs, so the other two columns add flags for the hand-checked sample "
        "(the last one reads code that is already merged, most of it long reviewed).",
    ]
    lines += [
        "",
        "| Pair | Python files changed (the two directories) | Lines added | Flags | Check time |",
        "| --- | --- | --- | --- | --- |",
    ]
    for p in result["pairs"]:
        lines.append(
            f"| {p['pair']} | {p['files']} | {p['added_lines']} | {p['flags']} | "
            f"{_ms(p['seconds'])} |"
        )
    # One row per distinct point: the same line flagged in a diff and in the tree is one.
    distinct: dict[tuple[str, str, str], dict] = {}
    for f in result["flags"]:
        if f["pattern"] != "not-reviewed":
            distinct.setdefault((f["path"], f["pattern"], f["snippet"]), f)
    points = list(distinct.values())
    checked = [f for f in points if f["verdict"] != "unchecked"]
    warranted = [f for f in checked if f["verdict"] == "warranted"]
    share = f"{len(warranted) / len(checked):.0%}" if checked else "n/a"
    restricted = [f for f in checked if f["scope"] == "restricted"]
    restricted_ok = [f for f in restricted if f["verdict"] == "warranted"]
    claims = [
        f
        for f in points
        if any(w in f["why"].lower() for w in ("silent", "never freed", "nothing frees"))
    ]
    restricted_share = f"{len(restricted_ok) / len(restricted):.0%}" if restricted else "n/a"
    lines += [
        "",
        "## Judged review points",
        "",
        f"In the measured scope (every backend and layer file changed between consecutive "
        f"releases): {len(restricted_ok)} of {len(restricted)} points warranted "
        f"({restricted_share}; target ≥ 90%). Over every distinct point, the whole-tree scan "
        f"included: {len(warranted)} of {len(checked)} ({share}; {len(points) - len(checked)} "
        f'unchecked). Points whose text claims behaviour ("silent", "never freed", '
        f'"nothing frees"): {len(claims)}.',
        "",
        "Each point was judged by reading the code at that release: is the reason returned, "
        "is the key bounded, is the branch reachable. The verdicts and their reasons are in "
        "`benchmarks/real_review_verdicts.yaml`.",
        "",
        SECOND_JUDGE,
        "",
        "| Pair or tree | At | Pattern | Point (prbot's text) | Verdict | Why (the judgement) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for f in points:
        note = f["note"].replace("|", "\\|")
        why = f["why"].replace("|", "\\|")
        lines.append(
            f"| {f['pair']} | `{f['path']}:{f['line']}` | `{f['pattern']}` | {why} | "
            f"{f['verdict']} | {note} |"
        )
    dropped = [
        v for v in _verdicts().values() if (v["path"], v["pattern"], v["snippet"]) not in distinct
    ]
    if dropped:
        lines += [
            "",
            "Points raised by earlier versions of the patterns and no longer raised "
            "(judged false; the TOKENSPEED_MLA shapes are tests in tests/test_review_*.py):",
            "",
        ]
        lines += [
            f"- `{v['pattern']}` at `{v['path']}` (`{v['snippet']}`): {v['note']}" for v in dropped
        ]
    unreadable = [f for f in result["flags"] if f["pattern"] == "not-reviewed"]
    if unreadable:
        lines += ["", "Files not reviewed (each a `not-reviewed` finding, never a crash):", ""]
        lines += [f"- {f['pair']}: {f['why']}" for f in unreadable]
    chunks = result["chunks"]
    if chunks:
        review = [c["review"] for c in chunks]
        ratios = [c["review"] / c["parse"] for c in chunks if c["parse"] > 0]
        lines += [
            "",
            "## Time per PR-sized diff",
            "",
            f"{len(chunks)} slices of up to {PR_SIZE} changed Python files (the check as the "
            "server runs it: reading head files through git, parsing, all five patterns), "
            "against `ast.parse` of the same files in the same run (files already read).",
            "",
            "| | Median | 90th percentile | Max |",
            "| --- | --- | --- | --- |",
            f"| Check per slice | {_ms(statistics.median(review))} | "
            f"{_ms(sorted(review)[int(0.9 * (len(review) - 1))])} | {_ms(max(review))} |",
            f"| Ratio to `ast.parse` | {statistics.median(ratios):.2f}× | "
            f"{sorted(ratios)[int(0.9 * (len(ratios) - 1))]:.2f}× | {max(ratios):.2f}× |",
        ]
    tokenspeed = result.get("tokenspeed")
    if tokenspeed:
        found = {f["pattern"] for f in tokenspeed["findings"]}
        base_found = {f["pattern"] for f in tokenspeed["base_declared_findings"]}
        lines += ["", "## TOKENSPEED_MLA (0.20.2 → 0.21.0)", ""]
        lines += ["| Pattern | At | Code |", "| --- | --- | --- |"]
        for f in tokenspeed["findings"]:
            snippet = f["snippet"].replace("|", "\\|")
            lines.append(f"| `{f['pattern']}` | `{f['path']}:{f['line']}` | `{snippet}` |")
        lines.append("")
        for pattern in TOKENSPEED_EXPECTED:
            state = "flagged" if pattern in found else "**not flagged**"
            if pattern not in found and pattern in base_found:
                state += (
                    " at 0.21.0, where "
                    + ", ".join(f"`{d}`" for d in tokenspeed["declared_at"])
                    + " declares the distribution; flagged when the requirement files are the "
                    "base's (the backend without that line)"
                )
            lines.append(f"- `{pattern}`: {state}")
        for pattern in TOKENSPEED_ABSENT:
            here = pattern in found
            with_base = pattern in base_found
            lines.append(
                f"- `{pattern}` (false on this backend, by the maintainer's reading): "
                + ("**flagged**" if here else "not flagged")
                + (
                    ", and **flagged** with the base's requirement files"
                    if with_base
                    else ", nor with the base's requirement files (no tokenspeed-mla line)"
                )
            )
    lines += [
        "",
        "## Caveats",
        "",
        f"- Only {len(points)} distinct points exist in all of this data, under the 20 the "
        "issue asks to hand-check: every one is checked instead. The patterns are tuned for "
        "precision (two or more pinned dimensions, sized allocations only, `except ImportError` "
        "only, top-level imports only), so recall is low by design.",
        "- The thresholds were refined while looking at earlier runs on these same releases "
        "(what was dropped: growing buffers re-validated in the `if`, memoised constant "
        "tables, version-fallback imports, feature probes of submodules, `ValueError` "
        "validation), so the precision above is measured on the development data.",
        "- Times are on a 2-core machine shared with seven other sessions (load 10-18).",
        "- Until this run the script discarded its restriction to the two directories "
        "(`_restricted` returned a copy nobody kept), so earlier pages reviewed whole release "
        "diffs, alphabetically up to the 300-file limit; the figures above are the first "
        "measured on the backend and layer files alone.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help="releases, oldest first (default: a list)")
    parser.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    parser.add_argument("--save", type=Path, help="also write the raw result as JSON here")
    parser.add_argument("--load", type=Path, help="render a saved result (verdicts re-read)")
    args = parser.parse_args(argv)
    if args.load:
        result = json.loads(args.load.read_text())
        verdicts = _verdicts()
        for flag in result["flags"]:
            verdict = verdicts.get((flag["path"], flag["pattern"], flag["snippet"]), {})
            flag["verdict"] = verdict.get("verdict", "unchecked")
            flag["note"] = verdict.get("note", "")
    else:
        result = run(args.versions or DEFAULT_VERSIONS)
    if args.save:
        args.save.write_text(json.dumps(result, indent=1))
    text = render(result)
    print(text)
    if args.write:
        OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
