"""The requirements check on real vLLM releases: each consecutive pair as base and head.

Run by hand (never in CI), with the trees from ``benchmarks/vllm_releases.py``:

    PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_requirements.py \
        [VERSION ...] [--no-resolve] [--out docs/benchmarks/real_requirements.md]

Per pair it counts the section's findings by kind (cells affected and with package
changes, packages added/removed/changed, new problems and inconsistent pins, stale and
may-be-stale compiled files, moved entries, changed files in no declared set, ignored index
options), the section status, uv runs, and the time per run. The baseline, measured in the
same run on the same pair, is the static part alone (``resolve: false``): the full run's
time is given as a ratio to it. Resolution uses the real uv against PyPI and the indexes
vLLM's rules name, with a persistent uv cache under ``$PRBOT_BENCH_CACHE/uv-cache`` and
``--uv-timeout`` per run, so a rerun is bounded. ``run(versions)`` and ``render(result)``
are the API a combined ``benchmarks/real_trees.py`` calls.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_releases  # noqa: E402

from bot.checks.base import CheckContext, MemoryCache  # noqa: E402
from bot.checks.requirements import run as run_check  # noqa: E402
from bot.core.snapshot import snapshot_from_checkout  # noqa: E402
from bot.local.sandbox import SandboxRunner  # noqa: E402
from bot.report import rules as rules_module  # noqa: E402

DEFAULT_VERSIONS = ["0.20.0", "0.20.2", "0.21.0", "0.22.0", "0.23.0", "0.32.0", "0.33.0"]
HAND_CHECK = "## Checked by hand"
OUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "real_requirements.md"
KINDS = (
    "cells_affected",
    "cells_changed",
    "added",
    "removed",
    "changed",
    "new_problems",
    "new_conflicts",
    "stale",
    "may_be_stale",
    "moved",
    "unreached",
    "ignored",
    "resolved_ok",
    "resolved_failed",
    "not_resolved",
)


def count_findings(findings: list[dict[str, Any]]) -> dict[str, int]:
    """The section's findings counted by kind (cells, packages, files)."""
    cells = [f for f in findings if f.get("kind") not in ("unreached", "compiled")]
    compiled = {(c["path"], c["verdict"]) for f in findings for c in f.get("compiled", [])}
    counts = {
        "cells_affected": len(cells),
        "cells_changed": sum(1 for f in cells if f["added"] or f["removed"] or f["changed"]),
        "added": sum(len(f["added"]) for f in cells),
        "removed": sum(len(f["removed"]) for f in cells),
        "changed": sum(len(f["changed"]) for f in cells),
        "new_problems": len(
            {(p["file"], p["line"], p["message"]) for f in cells for p in f["problems"] if p["new"]}
        ),
        "new_conflicts": len({c["name"] for f in cells for c in f["conflicts"] if c["new"]}),
        "stale": sum(1 for _, verdict in compiled if verdict == "stale"),
        "may_be_stale": sum(1 for _, verdict in compiled if verdict != "stale"),
        "moved": len({(m["from"], m["path"]) for f in cells for m in f.get("moved", [])}),
        "unreached": sum(1 for f in findings if f.get("kind") == "unreached"),
        "ignored": len({(i["file"], i["line"]) for f in cells for i in f.get("ignored", [])}),
        "resolved_ok": sum(1 for f in cells if f["resolution"] == "ok"),
        "resolved_failed": sum(1 for f in cells if f["resolution"] == "failed"),
        "not_resolved": sum(1 for f in cells if f["resolution"] == "skipped"),
    }
    return counts


def _one_run(
    repo: Path, rules: Any, work: Path, runner: SandboxRunner | None, uv_cache: Path
) -> tuple[Any, float, int]:
    snapshot = snapshot_from_checkout(repo, "base", "head", trusted=True)
    context = CheckContext(work_dir=work, runner=runner, cache=MemoryCache(), uv_cache_dir=uv_cache)
    started = time.perf_counter()
    section = run_check(snapshot, rules, context)
    seconds = time.perf_counter() - started
    return section, seconds, (runner.invocations if runner else 0)


def run_pair(base: str, head: str, *, resolve: bool = True, uv_timeout: float = 120.0) -> dict:
    """One consecutive pair: the static baseline, then the full check."""
    repo = vllm_releases.pair(base, head)
    ruleset = rules_module.load_builtin("vllm").checks.requirements
    uv_cache = vllm_releases.CACHE / "uv-cache"
    uv_cache.mkdir(parents=True, exist_ok=True)
    static_rules = ruleset.model_copy(update={"resolve": False})
    full_rules = ruleset.model_copy(update={"uv_timeout_seconds": uv_timeout, "max_parallel": 2})
    with tempfile.TemporaryDirectory(prefix="prbot-real-req-") as tmp:
        work = Path(tmp)
        (work / "static").mkdir()
        (work / "full").mkdir()
        static, static_s, _ = _one_run(repo, static_rules, work / "static", None, uv_cache)
        runner = SandboxRunner(timeout=uv_timeout) if resolve else None
        section, full_s, uv_runs = _one_run(repo, full_rules, work / "full", runner, uv_cache)
    return {
        "pair": f"{base} → {head}",
        "status": section.status.value,
        "summary": section.summary,
        "counts": count_findings(section.findings),
        "unreached": [
            {"path": f["platform"], "reached_by": f.get("reached_by", [])}
            for f in section.findings
            if f.get("kind") == "unreached"
        ],
        "compiled": sorted(
            {
                f"{c['path']} ({c['verdict']})"
                for f in section.findings
                for c in f.get("compiled", [])
            }
        ),
        "static_seconds": static_s,
        "seconds": full_s,
        "uv_runs": uv_runs,
        "static_status": static.status.value,
    }


def run(versions: list[str] | None = None, *, resolve: bool = True, uv_timeout: float = 120.0):
    """Every consecutive pair of ``versions`` (sorted); a pair that cannot be built is noted."""
    versions = sorted(versions or DEFAULT_VERSIONS, key=vllm_releases.version_key)
    pairs, errors = [], []
    for base, head in zip(versions, versions[1:], strict=False):
        try:
            pairs.append(run_pair(base, head, resolve=resolve, uv_timeout=uv_timeout))
        except (vllm_releases.ReleaseError, OSError) as exc:
            errors.append(f"{base} → {head}: {exc}")
        print(f"real_requirements: {base} → {head} done", file=sys.stderr)
    return {"versions": versions, "resolve": resolve, "pairs": pairs, "errors": errors}


_SHORT = {
    "cells_affected": "cells",
    "cells_changed": "with changes",
    "added": "+pkg",
    "removed": "−pkg",
    "changed": "~pkg",
    "new_problems": "errors",
    "new_conflicts": "pins",
    "stale": "stale",
    "may_be_stale": "may be stale",
    "moved": "moved",
    "unreached": "unreached",
    "ignored": "ignored",
    "resolved_ok": "ok",
    "resolved_failed": "failed",
    "not_resolved": "not resolved",
}


def render(result: dict) -> str:
    """The figures as Markdown (docs/benchmarks/real_requirements.md)."""
    versions = " ".join(result["versions"])
    flag = "" if result["resolve"] else " --no-resolve"
    lines = [
        "# Requirements check on real vLLM releases",
        "",
        "```",
        "PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_requirements.py "
        f"{versions}{flag}",
        "```",
        "",
        "Each consecutive pair of releases is base → head of one `prbot check`, with",
        "`rules/vllm.yaml`. Counts are the section's findings (cells are platform × arch;",
        "packages are summed over cells). Time is the whole check; the baseline is the same",
        "check with `resolve: false` on the same pair in the same run.",
        "",
        "| pair | status | "
        + " | ".join(_SHORT[k] for k in KINDS)
        + " | uv runs | time | × static |",
        "| --- | --- | " + " | ".join("---:" for _ in KINDS) + " | ---: | ---: | ---: |",
    ]
    for item in result["pairs"]:
        counts = item["counts"]
        # A pair where no requirement file changed takes no measurable time either way.
        fast = item["static_seconds"] < 0.01
        ratio = "—" if fast else f"{item['seconds'] / item['static_seconds']:.1f}×"
        lines.append(
            f"| {item['pair']} | {item['status']} | "
            + " | ".join(str(counts[k]) for k in KINDS)
            + f" | {item['uv_runs']} | {item['seconds']:.1f} s | {ratio} |"
        )
    lines += ["", "## Per pair", ""]
    for item in result["pairs"]:
        lines.append(f"- **{item['pair']}** ({item['status']}): {item['summary']}")
        for unreached in item["unreached"]:
            reached = "; ".join(unreached["reached_by"]) or "nothing"
            lines.append(f"  - in no declared set: `{unreached['path']}` (reached by: {reached})")
        for compiled in item["compiled"]:
            lines.append(f"  - compiled: `{compiled}`")
    for error in result["errors"]:
        lines.append(f"- not run: {error}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help=f"default: {' '.join(DEFAULT_VERSIONS)}")
    parser.add_argument("--no-resolve", action="store_true", help="static analysis only")
    parser.add_argument("--uv-timeout", type=float, default=120.0, help="seconds per uv run")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = run(args.versions, resolve=not args.no_resolve, uv_timeout=args.uv_timeout)
    text = render(result)
    # The hand check below the figures is written by a person; a rerun keeps it.
    if args.out.exists() and HAND_CHECK in (old := args.out.read_text()):
        text += "\n" + old[old.index(HAND_CHECK) :]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
