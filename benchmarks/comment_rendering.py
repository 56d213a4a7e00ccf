"""prbot's real reports in a real browser at GitHub's comment width: what a reader sees go wrong.

Run by hand (never in CI):

    PRBOT_BENCH_CACHE=/tmp/prbot-bench uv run python benchmarks/comment_rendering.py \
        [--baseline REV] [--write]

Three reports from real vLLM trees (``benchmarks/vllm_releases.py`` downloads the sdists;
nothing is committed): 0.20.2 plus the TOKENSPEED_MLA backend file and its registry entry
(``tokenspeed_pair``), and the release diffs 0.20.2 → 0.21.0 and 0.27.1 → 0.33.0, each from
``prbot check`` (rules ``vllm``, uv resolution off). Each is rendered with cmark-gfm (GitHub's
parser and extensions) inside the stylesheet of ``screenshot_comment.py`` at 780 px, every
fold opened, and measured by a script in the page run by headless Chromium
(``apt-get install -y chromium fonts-noto-color-emoji``; ``--dump-dom`` prints the figures the
script wrote). Counted per report, each should be 0:

- tables wider than the comment (``scrollWidth > clientWidth``), and other elements whose right
  edge passes the comment's (a code block scrolls by design and is not counted);
- literal backticks and Buildkite ``:shortcode:`` text outside code;
- a package change on the same line as "reached by:" (glued list items);
- empty ``()`` outside code;
- folds inside a skipped section (``⏭️`` in the status lines);
- "1 files"-style plurals and "(s)";
- Before/After (or Expected/Actual) cells whose text is the same.

The benchmark chart of the jobs section (``bot.jobs.progress.mermaid_chart``) has no results in
these reports (no GPU ran), so it is drawn for the configurations of 0.33.0's own MLA decode
benchmark (``benchmarks/attention_benchmarks/configs/mla_decode.yaml``: its batch specs, one
backend) with ratios made up around 1.0, and rendered by mermaid itself when
``$PRBOT_MERMAID_JS`` (default: ``$PRBOT_BENCH_CACHE/mermaid/node_modules/mermaid/dist/
mermaid.min.js``, from ``npm install mermaid`` there) exists: overlapping x-axis labels are
counted from their boxes, and the y-axis' first tick is read.

``--baseline REV`` also renders each report by prbot as of REV (``git archive``), in the same
run, for the page's before column; ``--write`` writes docs/benchmarks/comment_rendering.md.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vllm_releases  # noqa: E402
from screenshot_comment import WIDTH, chromium, render_page  # noqa: E402

from bot.jobs.progress import mermaid_chart  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks" / "comment_rendering.md"
# One of each defect planted (two Before/After pairs: a list item and a table row): what the
# script in the page must find, so a 0 above means none was there, not a blind checker.
PLANTED = Path(__file__).with_name("comment_rendering_planted.md")
PLANTED_EXPECTED = {key: 1 for key in (
    "wide_tables", "backticks", "shortcodes", "glued", "empty_parens", "skipped_folds", "grammar"
)} | {"wide_other": 0, "same_cells": 2}  # fmt: skip
CASES = {
    "0.20.2 + TOKENSPEED_MLA": vllm_releases.tokenspeed_pair,
    "0.20.2 → 0.21.0": lambda: vllm_releases.pair("0.20.2", "0.21.0"),
    "0.27.1 → 0.33.0": lambda: vllm_releases.pair("0.27.1", "0.33.0"),
}
FIGURES = {
    "wide_tables": "tables wider than the comment",
    "wide_other": "other elements past the comment's edge",
    "backticks": "literal backticks",
    "shortcodes": "`:shortcode:` text",
    "glued": 'package change glued to "reached by:"',
    "empty_parens": "empty `()`",
    "skipped_folds": "folds in skipped sections",
    "grammar": '"1 files" or "(s)"',
    "same_cells": "Before/After cells that read the same",
}
CHART_FIGURES = {
    "bars": "bars",
    "overlapping_labels": "configuration labels overlapping another",
    "y_start": "ratio axis first tick",
}

# Runs in the page (every fold opened), then writes each figure with up to 5 examples.
MEASURE = Path(__file__).with_suffix(".js")


def report_markdown(repo: Path, revision: str | None = None) -> str:
    """``prbot check`` on ``repo`` (base..head), by this checkout or by prbot as of REV."""
    with tempfile.TemporaryDirectory(prefix="prbot-render-") as tmp:
        env = dict(os.environ)
        cwd = str(ROOT)
        if revision:
            source = Path(tmp) / "src"
            source.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
            env["PYTHONPATH"] = cwd = str(source)
        rules = Path(tmp) / "rules.yml"
        rules.write_text("extends: vllm\nchecks:\n  requirements:\n    resolve: false\n")
        done = subprocess.run(
            [sys.executable, "-m", "bot", "check", "--repo", str(repo), "--base", "base",
             "--head", "head", "--rules", str(rules), "--no-cache"],
            capture_output=True, text=True, timeout=1800, env=env, cwd=cwd,
        )  # fmt: skip
    if not done.stdout.startswith("<!-- prbot:report -->"):
        raise SystemExit(f"prbot check on {repo} wrote no report:\n{done.stderr[-2000:]}")
    return done.stdout


def mermaid_js() -> Path | None:
    default = vllm_releases.CACHE / "mermaid" / "node_modules" / "mermaid" / "dist"
    path = Path(os.environ.get("PRBOT_MERMAID_JS", default / "mermaid.min.js"))
    return path if path.exists() else None


def measure(markdown: str, work: Path, name: str) -> dict:
    """The page's figures, as Chromium computed them."""
    page = render_page(markdown, open_folds=True)
    script = mermaid_js()
    tags = f"<script src='{script.as_uri()}'></script>" if script else ""
    measuring = MEASURE.read_text().replace("%(names)s", json.dumps(list(FIGURES)))
    tags += f"<script>{measuring}</script>"
    path = work / f"{re.sub(r'[^A-Za-z0-9.]+', '-', name)}.html"
    path.write_text(page.replace("</body>", tags + "</body>"))
    with tempfile.TemporaryDirectory(prefix="prbot-chromium-") as profile:
        done = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--allow-file-access-from-files", f"--user-data-dir={profile}",
             f"--window-size={WIDTH + 2},1400", "--virtual-time-budget=20000", "--dump-dom",
             path.as_uri()],
            capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
    found = re.search(r'<pre id="prbot-figures">(.*?)</pre>', done.stdout, re.S)
    if not found:
        raise SystemExit(f"{name}: the page wrote no figures (see {path})")
    return json.loads(html.unescape(found.group(1)))


CHART_NAME = "MLA decode benchmark"


def chart_comparisons() -> list[dict]:
    """0.33.0's MLA decode benchmark batch specs for one backend, ratios made up near 1."""
    config = (
        vllm_releases.tree("0.33.0") / "benchmarks/attention_benchmarks/configs/mla_decode.yaml"
    )
    specs = yaml.safe_load(config.read_text())["batch_specs"]
    return [
        {"config": f"FLASHINFER_MLA {spec}", "ratio": 0.97 + 0.01 * (i % 7)}
        for i, spec in enumerate(specs)
    ]


def chart_case() -> str:
    """The chart ``mermaid_chart`` draws for those configurations."""
    return "```mermaid\n" + mermaid_chart(CHART_NAME, chart_comparisons()) + "\n```\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="REV", help="also render with prbot at REV")
    parser.add_argument("--write", action="store_true", help=f"write {PAGE.name}")
    parser.add_argument("--keep", type=Path, help="keep the pages and reports in this folder")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="prbot-rendering-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    for name, build in CASES.items():
        repo = build()
        for side, revision in (("this branch", None), ("baseline", args.baseline)):
            if side == "baseline" and not revision:
                continue
            markdown = report_markdown(repo, revision)
            tag = f"{name} {side}"
            (work / f"{re.sub(r'[^A-Za-z0-9.]+', '-', tag)}.md").write_text(markdown)
            result = measure(markdown, work, tag)
            result["characters"] = len(markdown)
            results.setdefault(name, {})[side] = result
            print(f"{tag}: {json.dumps(result['figures'])}", file=sys.stderr)
    planted = measure(PLANTED.read_text(), work, "planted")["figures"]
    print(f"planted: {json.dumps(planted)}", file=sys.stderr)
    chart = measure(chart_case(), work, "chart")
    baseline_chart = None
    if args.baseline:
        baseline_chart = measure(baseline_chart_case(args.baseline, work), work, "chart-baseline")
    print(json.dumps({"reports": results, "chart": chart}, indent=1, ensure_ascii=False))
    if args.write:
        write_page(results, chart, baseline_chart, args.baseline, planted)
    return 0


def baseline_chart_case(revision: str, work: Path) -> str:
    """The same chart drawn by ``mermaid_chart`` as of REV (its own ``bot`` package)."""
    source = work / "baseline-src"
    if not source.exists():
        source.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    code = (
        "import json, sys; from bot.jobs.progress import mermaid_chart;"
        "print(mermaid_chart(sys.argv[1], json.load(sys.stdin)), end='')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, CHART_NAME], input=json.dumps(chart_comparisons()),
        capture_output=True, text=True, check=True, cwd=str(source),
        env=dict(os.environ, PYTHONPATH=str(source)),
    )  # fmt: skip
    return "```mermaid\n" + done.stdout + "\n```\n"


def _versions() -> str:
    """Chromium's and mermaid's versions, for the page."""
    done = subprocess.run([chromium(), "--version"], capture_output=True, text=True, check=False)
    package = mermaid_js()
    version = "not found"
    if package is not None:
        meta = package.parent.parent / "package.json"
        version = json.loads(meta.read_text()).get("version", "?") if meta.exists() else "?"
    return f"{done.stdout.strip() or 'Chromium (version unknown)'}; mermaid {version}"


def write_page(
    results: dict, chart: dict, baseline_chart: dict | None, baseline: str | None, planted: dict
):
    names = list(results)
    order = [(n, side) for n in names for side in ("baseline", "this branch") if side in results[n]]
    heads = " | ".join(
        f"{n}: {'`' + baseline[:7] + '`' if s == 'baseline' else s}" for n, s in order
    )
    lines = [
        "# Comment rendering: prbot's real reports in a browser",
        "",
        "```sh",
        "PRBOT_BENCH_CACHE=/tmp/prbot-bench uv run python benchmarks/comment_rendering.py"
        + (f" --baseline {baseline}" if baseline else "")
        + " --write",
        "```",
        "",
        "`prbot check` (rules `vllm`, uv resolution off) on three real vLLM trees: 0.20.2 plus "
        "the TOKENSPEED_MLA backend file and its registry entry, and the release diffs "
        "0.20.2 → 0.21.0 and 0.27.1 → 0.33.0. Each report is rendered with cmark-gfm (GitHub's "
        "parser and extensions) at GitHub's 780 px comment width, every fold opened, and "
        "measured by a script in the page run by headless Chromium"
        + (f", by this branch and by prbot at `{baseline}` in the same run" if baseline else "")
        + ". What each figure counts is in the script's docstring. Target: 0 of each.",
        "",
        f"Browser: {_versions()}. The checker itself, on `benchmarks/comment_rendering_planted.md`"
        " (one of each defect planted, two Before/After pairs): "
        + ", ".join(f"{FIGURES[k]} {planted[k]}" for k in FIGURES)
        + (
            " (as planted)."
            if all(planted[k] == PLANTED_EXPECTED[k] for k in FIGURES)
            else f" (NOT as planted: expected {PLANTED_EXPECTED})."
        ),
        "",
        f"| Figure | {heads} |",
        "| --- |" + " ---: |" * len(order),
        "| comment characters | "
        + " | ".join(f"{results[n][s]['characters']:,}" for n, s in order)
        + " |",
    ]
    for key, label in FIGURES.items():
        lines.append(
            f"| {label} | "
            + " | ".join(str(results[n][s]["figures"][key]) for n, s in order)
            + " |"
        )
    examples = [
        (n, s, key, text)
        for n, s in order
        for key, texts in results[n][s]["examples"].items()
        for text in texts[:2]
    ]
    if examples:
        lines += ["", "What was counted (up to two of each):", ""]
        lines += [
            f"- {n} ({s}), {FIGURES[key]}: {json.dumps(text, ensure_ascii=False)}"
            for n, s, key, text in examples
        ]
    lines += [
        "",
        "## The benchmark chart",
        "",
        "No GPU ran for these reports, so the jobs section has no chart in them. The chart "
        "`mermaid_chart` draws is rendered for the 18 batch specs of 0.33.0's "
        "`benchmarks/attention_benchmarks/configs/mla_decode.yaml` (one backend, ratios made "
        "up between 0.97 and 1.03), by mermaid "
        "(npm `mermaid`, in the same Chromium) at the comment's width.",
        "",
    ]
    charts = [("this branch", chart)] + ([(baseline[:7], baseline_chart)] if baseline_chart else [])
    if not chart["mermaid"]:
        lines.append("mermaid was not found ($PRBOT_MERMAID_JS), so the chart was not drawn.")
    else:
        lines += [
            "| Figure | "
            + " | ".join(f"`{n}`" if n != "this branch" else n for n, _ in charts)
            + " |",
            "| --- |" + " ---: |" * len(charts),
        ]
        for key, label in CHART_FIGURES.items():
            lines.append(
                f"| {label} | " + " | ".join(str(c["charts"][0][key]) for _, c in charts) + " |"
            )
    PAGE.write_text("\n".join(lines) + "\n")
    print(f"wrote {PAGE}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
