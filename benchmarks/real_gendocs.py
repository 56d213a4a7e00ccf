"""Generated docs on real vLLM releases: prbot's verdict beside vLLM's own generator's.

    PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_gendocs.py \\
        [VERSIONS ...] [--no-pairs] [--out docs/benchmarks/real_gendocs.md]

Per release (an unpacked PyPI sdist, see ``vllm_releases.py``):

- vLLM's verdict: its generator of that release run directly (not through prbot), up to
  0.26 ``tools/pre_commit/generate_attention_backend_docs.py --output TMP`` compared byte
  for byte with the committed doc (what its ``--check`` does); from 0.27 the mkdocs-gen-files
  script ``docs/mkdocs/gen_files/generate_attention_backends.py``, which fills the page's
  markers and raises when one is missing or left over. ``mkdocs_gen_files`` is not
  installed here, so that script runs under prbot's stand-in module (stated in the output).
- prbot's verdict: ``check_doc`` with the vLLM rules, the generator run in the sandbox.
- the extractor's cell agreement with the generator's tables, and the time of each side.

Per consecutive pair (``vllm_releases.pair(a, b)``: branches ``base`` and ``head``): the
generated_docs check on the PR ``base..head``, once as a trusted author (the head's
generator runs) and once as an untrusted one (the base's generator runs on the head tree).

``--loss BASE HEAD`` runs the generated_docs check (trusted) on that one pair and rewrites only
the page's information-loss section: each row whose changed cells all went to the generator's
defaults, the warning prbot raised for it, and what the class it names declares itself at
HEAD (read with ``ast``). A full run keeps that section as it was.

Nothing from the trees is written into this repository; copies live in temp dirs.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_releases  # noqa: E402

from bot.checks.base import CheckContext  # noqa: E402
from bot.checks.generated_docs import run as run_check  # noqa: E402
from bot.core.snapshot import DirTree, snapshot_from_checkout  # noqa: E402
from bot.gendocs.config import GeneratedDocsRules  # noqa: E402
from bot.gendocs.doc_check import check_doc  # noqa: E402
from bot.gendocs.generator import STAND_IN  # noqa: E402
from bot.jobs.backends import registered_backends  # noqa: E402
from bot.local.sandbox import SandboxRunner  # noqa: E402
from bot.report import rules  # noqa: E402

DOC = "docs/design/attention_backends.md"
COMMITTED_GENERATOR = "tools/pre_commit/generate_attention_backend_docs.py"
MKDOCS_GENERATOR = "docs/mkdocs/gen_files/generate_attention_backends.py"
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "benchmarks" / "real_gendocs.md"


def releases_available() -> list[str]:
    trees = vllm_releases.CACHE / "trees"
    found = [p.name.removeprefix("vllm-") for p in trees.glob("vllm-*") if (p / "vllm").is_dir()]
    return sorted(found, key=vllm_releases.version_key)


def doc_rules() -> GeneratedDocsRules:
    vllm = rules.load_builtin("vllm").checks.generated_docs
    return GeneratedDocsRules(docs=vllm.docs, hooks=[])


def vllm_verdict(tree: Path) -> dict[str, Any]:
    """vLLM's own generator of the release on its own tree: "up to date" or not."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir()}
    with tempfile.TemporaryDirectory(prefix="vllm-gen-") as scratch:
        started = time.perf_counter()
        if (tree / COMMITTED_GENERATOR).is_file():
            output = Path(scratch) / "attention_backends.md"
            done = subprocess.run(
                [sys.executable, "-I", "-S", COMMITTED_GENERATOR, "--output", str(output)],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            seconds = time.perf_counter() - started
            if done.returncode != 0 or not output.is_file():
                return {"generator": COMMITTED_GENERATOR, "verdict": "failed", "seconds": seconds}
            same = output.read_bytes() == (tree / DOC).read_bytes()
            verdict = "up to date" if same else "out of date"
            return {"generator": COMMITTED_GENERATOR, "verdict": verdict, "seconds": seconds}
        if (tree / MKDOCS_GENERATOR).is_file():
            result = Path(scratch) / "result.json"
            done = subprocess.run(
                [sys.executable, "-I", "-S", str(STAND_IN), MKDOCS_GENERATOR, str(result)],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            seconds = time.perf_counter() - started
            data = json.loads(result.read_text()) if result.is_file() else {"error": "no result"}
            if data.get("error"):
                verdict = "failed"
            elif data.get("marker_error"):
                verdict = "out of date"
            else:
                verdict = "up to date"
            return {
                "generator": MKDOCS_GENERATOR + " (stand-in mkdocs_gen_files)",
                "verdict": verdict,
                "seconds": seconds,
            }
    return {"generator": None, "verdict": "no generator", "seconds": 0.0}


def prbot_verdict(finding: dict[str, Any]) -> str:
    if finding["in_sync"]:
        return "in sync"
    if finding["cells"] or finding.get("manual_edits"):
        return "drift"
    return "not verified"


AGREES = {("up to date", "in sync"), ("out of date", "drift"), ("failed", "not verified")}


def release_row(version: str) -> dict[str, Any]:
    tree = vllm_releases.tree(version)
    theirs = vllm_verdict(tree)
    rule = doc_rules().docs[0]
    with tempfile.TemporaryDirectory(prefix="prbot-real-gendocs-") as work:
        started = time.perf_counter()
        result = check_doc(rule, DirTree(tree), runner=SandboxRunner(), work_dir=Path(work))
        seconds = time.perf_counter() - started
    finding = result.to_json() if result is not None else None
    ours = prbot_verdict(finding) if finding else "no doc"
    compared = finding["extractor_cells_compared"] if finding else 0
    disagreements = finding["extractor_disagreements"] if finding else []
    return {
        "version": version,
        "vllm": theirs,
        "prbot": ours,
        "agree": (theirs["verdict"], ours) in AGREES,
        "mode": finding["mode"] if finding else None,
        "judged_by": (finding.get("generator") or {}).get("script") if finding else None,
        "seconds": seconds,
        "cells_compared": compared,
        "cells_disagreeing": len(disagreements),
        "extractor_problems": len(finding["extractor_problems"]) if finding else 0,
        "disagreements": disagreements[:12],
        "summary": finding and (finding["problems"][:1] or finding["cells"][:1]),
    }


def pair_row(base: str, head: str) -> dict[str, Any]:
    repo = vllm_releases.pair(base, head)
    out: dict[str, Any] = {"base": base, "head": head}
    for trusted in (True, False):
        snapshot = snapshot_from_checkout(repo, "base", "head", trusted=True)
        snapshot = dataclasses.replace(snapshot, trusted=trusted)
        with tempfile.TemporaryDirectory(prefix="prbot-real-gendocs-pair-") as work:
            context = CheckContext(work_dir=Path(work), runner=SandboxRunner())
            started = time.perf_counter()
            section = run_check(snapshot, doc_rules(), context)
            seconds = time.perf_counter() - started
        snapshot.close()
        doc = next((f for f in section.findings if f["path"] == DOC), None)
        key = "trusted" if trusted else "untrusted"
        out[key] = {
            "status": str(section.status),
            "summary": section.summary,
            "verdict": prbot_verdict(doc) if doc else "no doc",
            "ran_from": ((doc or {}).get("generator") or {}).get("ran_from"),
            "preview_changes": len((doc or {}).get("preview") or []),
            "seconds": seconds,
        }
    return out


def run(versions: list[str], *, pairs: bool = True) -> dict[str, Any]:
    """Every release and consecutive pair of ``versions``; the figures as data."""
    versions = sorted(versions, key=vllm_releases.version_key)
    result: dict[str, Any] = {"releases": [], "pairs": []}
    for version in versions:
        print(f"real_gendocs: {version}", file=sys.stderr)
        result["releases"].append(release_row(version))
    if pairs:
        for base, head in zip(versions, versions[1:], strict=False):
            print(f"real_gendocs: {base}..{head}", file=sys.stderr)
            result["pairs"].append(pair_row(base, head))
    load = os.getloadavg()[0]
    result["machine"] = f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load {load:.1f}"
    return result


def render(result: dict[str, Any]) -> str:
    """The figures as the Markdown page docs/benchmarks/real_gendocs.md."""
    releases = result["releases"]
    agreed = sum(r["agree"] for r in releases)
    compared = sum(r["cells_compared"] for r in releases)
    disagreeing = sum(r["cells_disagreeing"] for r in releases)
    exact = sum(1 for r in releases if r["cells_compared"] and not r["cells_disagreeing"])
    lines = [
        "# Generated docs on real vLLM releases",
        "",
        "```sh",
        "PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_gendocs.py "
        + " ".join(r["version"] for r in releases),
        "```",
        "",
        f"Machine: {result['machine']} (shared with other sessions). Baseline: vLLM's own "
        "generator of each release, run directly on the unpacked PyPI sdist in the same run "
        "(up to 0.26 its `--output` compared with the committed doc, as its `--check` does; "
        "from 0.27 the mkdocs-gen-files script, which raises on a missing or left-over "
        "marker, run under prbot's stand-in `mkdocs_gen_files` because mkdocs is not "
        "installed). prbot: `check_doc` with `rules/vllm.yaml`, the generator run in the "
        "sandbox (`python -I -S`: no site-packages, so no torch).",
        "",
        f"**Verdicts agree on {agreed} of {len(releases)} releases.** The extractor matches "
        f"the generator on {compared - disagreeing} of {compared} cells "
        f"({_percent(compared - disagreeing, compared)}); exactly on {exact} of "
        f"{len(releases)} releases. Its disagreements are logged by prbot, never shown as "
        "drift.",
        "",
        "| Release | Doc | vLLM's generator | prbot | Agree | Extractor cells agreeing "
        "| Extractor problems | vLLM generator time | prbot check time | ratio |",
        "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in releases:
        theirs = r["vllm"]
        ratio = r["seconds"] / theirs["seconds"] if theirs["seconds"] else 0.0
        lines.append(
            f"| {r['version']} | {r['mode'] or '-'} | {theirs['verdict']} | {r['prbot']} | "
            f"{'yes' if r['agree'] else '**no**'} | "
            f"{r['cells_compared'] - r['cells_disagreeing']} / {r['cells_compared']} | "
            f"{r['extractor_problems']} | {theirs['seconds'] * 1000:.0f} ms | "
            f"{r['seconds'] * 1000:.0f} ms | {ratio:.2f}x |"
        )
    lines += [
        "",
        "prbot's time includes copying the generator's inputs (`vllm/`, `docs/design`, the "
        "generator's directory) into a sandbox directory, the sandboxed run of the same "
        "generator, prbot's extractor on the tree (for the cell-level explanation and the "
        "agreement figure) and the comparison.",
        "",
    ]
    worst = [r for r in releases if r["cells_disagreeing"]]
    if worst:
        lines += ["Where the extractor falls behind the generator (first cells per release):", ""]
        for r in worst:
            shown = sorted({(c["table"], c["row"], c["kind"]) for c in r["disagreements"]})[:6]
            text = "; ".join(f"{t} / {row} ({kind})" for t, row, kind in shown)
            lines.append(f"- {r['version']}: {r['cells_disagreeing']} cells: {text}")
        lines += [
            "",
            "(0.17 and 0.18: vLLM's generator of those releases puts no footnote marker on "
            "`FLASHINFER_MLA_SPARSE` in the Blackwell MLA list; from 0.19 it does. The source "
            "has the same shape in both (a spliced `*sparse_backends` list), so the extractor "
            "cannot tell them apart.)",
            "",
        ]
    if result["pairs"]:
        lines += [
            "## Release pairs as PRs (`base..head`)",
            "",
            "The generated_docs check on the diff between consecutive releases, with the "
            "head release's doc. Trusted: the head's generator runs (the PR changes it); "
            "untrusted: the base revision's generator runs on the head tree.",
            "",
            "| Pair | Trusted: verdict (generator) | Untrusted: verdict (generator) "
            "| vLLM on head | Time (trusted) |",
            "| --- | --- | --- | --- | ---: |",
        ]
        head_verdict = {r["version"]: r["vllm"]["verdict"] for r in releases}
        for p in result["pairs"]:
            t, u = p["trusted"], p["untrusted"]
            lines.append(
                f"| {p['base']}..{p['head']} | {_pair_verdict(t)} | {_pair_verdict(u)} | "
                f"{head_verdict.get(p['head'], '?')} | {t['seconds'] * 1000:.0f} ms |"
            )
        lines += [
            "",
            "Trusted, the verdict on every pair that touches the doc's sources is vLLM's own on "
            "the head release. Untrusted, the base release's generator judges the head tree: "
            "where a release changed the generator together with the doc (a new column, a new "
            "table, new footnotes), the old generator writes the old layout and the doc is "
            "called out of sync, with the cells. That is the intended outcome for a PR from an "
            "author who is not trusted: their changed generator never runs, so a doc regenerated "
            "with it cannot pass on its own say-so. From 0.26..0.27 the head's doc is a "
            "marker page, which the base's committed-doc generator cannot produce, so the "
            "extractor judges it.",
            "",
        ]
        notes = [
            f"- {p['base']}..{p['head']} untrusted: {p['untrusted']['summary']}"
            for p in result["pairs"]
            if p["untrusted"]["verdict"] != "in sync"
        ]
        if notes:
            lines += ["Untrusted verdicts other than in sync:", "", *notes, ""]
    return "\n".join(lines)


def _pair_verdict(side: dict[str, Any]) -> str:
    if side["status"] == "skip":
        return "skipped (no source of the doc changed)"
    return f"{side['verdict']} ({side['ran_from'] or 'extractor'})"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


LOSS_START = "<!-- information-loss: benchmarks/real_gendocs.py --loss -->"
LOSS_END = "<!-- /information-loss -->"
LOSS_WORDS = "went from specific values to defaults"
REGISTRY = "vllm/v1/attention/backends/registry.py"


def _own_members(tree: Path, class_path: str) -> tuple[str, list[str], list[str]]:
    """The class ``class_path`` names: its file, its bases, the names its own body defines."""
    module, _, name = class_path.rpartition(".")
    path = module.replace(".", "/") + ".py"
    try:
        parsed = ast.parse((tree / path).read_text())
    except (OSError, SyntaxError):
        return path, [], []
    for node in parsed.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            own = [
                item.name if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                else ast.unparse(item.targets[0]) if isinstance(item, ast.Assign)
                else type(item).__name__
                for item in node.body
            ]  # fmt: skip
            return path, [ast.unparse(b) for b in node.bases], own
    return path, [], []


def loss_section(base: str, head: str) -> str:
    """The rows of ``base..head`` that prbot flags as information lost, with the evidence."""
    repo = vllm_releases.pair(base, head)
    snapshot = snapshot_from_checkout(repo, "base", "head", trusted=True)
    with tempfile.TemporaryDirectory(prefix="prbot-real-gendocs-loss-") as work:
        context = CheckContext(work_dir=Path(work), runner=SandboxRunner())
        section = run_check(snapshot, doc_rules(), context)
        registry = snapshot.head.read_text(REGISTRY) or ""
    snapshot.close()
    doc = next((f for f in section.findings if f["path"] == DOC), None) or {}
    preview = doc.get("preview") or []
    warnings = [p for p in doc.get("problems") or [] if LOSS_WORDS in p.get("message", "")]
    enums = ["AttentionBackendEnum", "MLAPrefillBackendEnum"]
    backends = {b.name: b.class_path for b in registered_backends(registry, REGISTRY, enums)[0]}
    head_tree = vllm_releases.tree(head)
    lines = [
        LOSS_START,
        f"## Rows that lost information ({base} → {head})",
        "",
        "```sh",
        "PRBOT_BENCH_CACHE=/tmp/prbot-bench uv run python benchmarks/real_gendocs.py"
        f" --loss {base} {head}",
        "```",
        "",
        f"The generated_docs check on the release diff {base} → {head} (trusted: the PR's "
        f"generator, run sandboxed; {doc.get('generator', {}).get('script', 'no generator')}) "
        f"previews {len(preview)} changed cells of `{DOC}`. A row whose changed cells all went "
        "from specific values to what vLLM's generator writes when the class declares nothing "
        f"(`Any`, `fp16, bf16`, `auto`, ❌) is a warning; {len(warnings)} "
        f"row{'s' if len(warnings) != 1 else ''} here:",
        "",
    ]
    for warning in warnings:
        lines.append(f"- prbot: ⚠️ {warning['message']}")
        table_row = warning["message"].split(":", 1)[0]
        row = table_row.split(" | ", 1)[-1].strip("`")
        cells = [c for c in preview if c["row"].strip("`") == row and c["change"] == "changed"]
        for c in cells:
            lines.append(f"  - {c['column']}: {c['before']} → {c['after']}")
        if row in backends:
            path, bases, own = _own_members(head_tree, backends[row])
            lines.append(
                f"  - at {head}, the registry names `{backends[row]}`; in `{path}` that class "
                f"({', '.join(bases) or 'no base'}) defines only: {', '.join(own) or 'nothing'}. "
                "The generator reads the class's own body, so it found none of the columns "
                "above: a generator gap, not the backend losing support."
            )
    if not warnings:
        lines.append("(none)")
    lines += ["", LOSS_END]
    return "\n".join(lines)


def _with_loss_section(page: str, section: str | None, previous: str) -> str:
    """``page`` with ``section`` (or the one ``previous`` had) at its end."""
    if section is None and LOSS_START in previous:
        section = previous[previous.index(LOSS_START) : previous.index(LOSS_END) + len(LOSS_END)]
    if LOSS_START in page:
        page = page[: page.index(LOSS_START)].rstrip() + "\n"
    return page.rstrip() + ("\n\n" + section if section else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help="default: every cached release")
    parser.add_argument("--no-pairs", action="store_true")
    parser.add_argument("--loss", nargs=2, metavar=("BASE", "HEAD"), help="only that section")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument(
        "--render", type=Path, metavar="JSON", help="only render figures written by --json"
    )
    args = parser.parse_args(argv)
    previous = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    if args.loss:
        section = loss_section(*args.loss)
        args.out.write_text(_with_loss_section(previous, section, "") + "\n", encoding="utf-8")
        print(section)
        return 0
    if args.render:
        page = render(json.loads(args.render.read_text(encoding="utf-8")))
        args.out.write_text(_with_loss_section(page, None, previous) + "\n", encoding="utf-8")
        print(page)
        return 0
    versions = args.versions or releases_available()
    if not versions:
        print("real_gendocs: no release trees; run benchmarks/vllm_releases.py", file=sys.stderr)
        return 2
    result = run(versions, pairs=not args.no_pairs)
    page = render(result)
    args.out.write_text(_with_loss_section(page, None, previous) + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
