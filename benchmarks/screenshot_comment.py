"""Screenshot prbot's comment as GitHub would show it (run by hand, never in CI).

    uv run python benchmarks/screenshot_comment.py [--markdown FILE] [--out PNG] [--open-folds]
    PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/screenshot_comment.py \
        --pair 0.20.2 0.21.0 --baseline main

``--pair`` renders a real vLLM release diff instead of the demo; ``--baseline REV`` renders
the same diff with prbot as of REV (``git archive`` into a temp dir) and prints its figures.
The figures measured in the browser on real reports (docs/benchmarks/comment_rendering.md)
come from ``benchmarks/comment_rendering.py``, which uses this module's page.

Without ``--markdown`` or ``--pair`` it runs ``prbot demo`` (about a minute: the whole webhook
path on the local GitHub test server) and takes the comment it posted. The Markdown is rendered with
cmark-gfm (``cmarkgfm``, GitHub's parser, with GitHub's extensions), styled by a small
stylesheet of our own modelled on github-markdown-css (GitHub's fonts, tables, code and fold
styles at the 780-pixel width of a PR conversation), and photographed with Debian's headless
Chromium (``apt-get install -y chromium``). The PNG goes to ``--out`` (default
``/tmp/prbot-comment.png``) with the HTML next to it; neither is committed.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

GFM_EXTENSIONS = ["autolink", "table", "strikethrough", "tagfilter", "tasklist"]
WIDTH = 780

# The parts of github-markdown-css a prbot comment uses (light theme).
STYLESHEET = """
body { margin: 0; background: #fff; }
.markdown-body { box-sizing: border-box; width: %(width)dpx; padding: 16px;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial,
  sans-serif, "Apple Color Emoji", "Segoe UI Emoji";
  font-size: 14px; line-height: 1.5; color: #1f2328; word-wrap: break-word;
  border: 1px solid #d1d9e0; border-radius: 6px; }
.markdown-body h3 { font-size: 1.25em; font-weight: 600; margin: 0 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body table, .markdown-body pre,
.markdown-body details { margin-top: 0; margin-bottom: 16px; }
.markdown-body ul { padding-left: 2em; }
.markdown-body code { padding: .2em .4em; font-size: 85%%; background: #818b981f;
  border-radius: 6px; font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas,
  "Liberation Mono", monospace; white-space: break-spaces; }
.markdown-body pre { padding: 16px; overflow: auto; font-size: 85%%; line-height: 1.45;
  background: #f6f8fa; border-radius: 6px; }
.markdown-body pre code { padding: 0; background: transparent; white-space: pre; }
.markdown-body table { display: block; width: max-content; max-width: 100%%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }
.markdown-body th { font-weight: 600; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body summary { cursor: pointer; display: list-item; }
.markdown-body details > :not(summary) { margin-left: 0; }
.markdown-body sub { font-size: 75%%; color: #59636e; }
.markdown-body a { color: #0969da; text-decoration: none; }
"""


def demo_comment() -> str:
    result = subprocess.run(
        [sys.executable, "-m", "bot", "demo"], capture_output=True, text=True, timeout=600
    )
    if result.returncode != 0:
        raise SystemExit(f"prbot demo failed:\n{result.stderr}")
    return result.stdout


ROOT = Path(__file__).resolve().parent.parent


def pair_comment(base: str, head: str, revision: str | None = None) -> str:
    """``prbot check`` on a real vLLM release diff (uv resolution off: rendering is the point),
    by this checkout's prbot or, with ``revision``, by prbot as of that commit."""
    sys.path.insert(0, str(Path(__file__).parent))
    from vllm_releases import pair

    repo = pair(base, head)
    with tempfile.TemporaryDirectory(prefix="prbot-shot-") as tmp:
        env = dict(os.environ)
        if revision:
            source = Path(tmp) / "src"
            source.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
            env["PYTHONPATH"] = str(source)
        rules = Path(tmp) / "rules.yml"
        rules.write_text("extends: vllm\nchecks:\n  requirements:\n    resolve: false\n")
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "bot",
                "check",
                "--repo",
                str(repo),
                "--base",
                "base",
                "--head",
                "head",
                "--rules",
                str(rules),
                "--no-cache",  # a shared cache database may be at another branch's schema
            ],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            cwd=env.get("PYTHONPATH") if revision else str(ROOT),
        )
    if result.returncode != 0:
        raise SystemExit(f"prbot check failed:\n{result.stderr}")
    return result.stdout


def figures(markdown: str, page: str) -> dict[str, int]:
    """What a reader would see go wrong: each should be 0 but the sizes."""
    summaries = re.findall(r"<summary>(.*?)</summary>", page, re.S)
    return {
        "comment characters": len(markdown),
        "folds": page.count("<details"),
        "unclosed folds": page.count("<details") - page.count("</details>"),
        "summaries": len(summaries),
        "summaries with literal Markdown": sum(("`" in s or "\\" in s) for s in summaries),
        "fold tags shown as text": page.count("&lt;/details&gt;") + page.count("&lt;details&gt;"),
        "zero-width characters": len(re.findall("[\u200b\u200c\u200d\u2060\ufeff]", page)),
    }


def render_page(markdown: str, *, open_folds: bool) -> str:
    body = cmarkgfm.markdown_to_html_with_extensions(
        markdown, options=Options.CMARK_OPT_UNSAFE, extensions=GFM_EXTENSIONS
    )
    if open_folds:
        body = re.sub(r"<details>", "<details open>", body)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape('prbot comment')}</title>"
        f"<style>{STYLESHEET % {'width': WIDTH}}</style></head>"
        f"<body><article class='markdown-body'>{body}</article></body></html>"
    )


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("no Chromium found: apt-get install -y chromium")


def screenshot(page: Path, out: Path, height: int) -> None:
    with tempfile.TemporaryDirectory(prefix="prbot-chromium-") as profile:
        subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",  # root in a container has no user namespace for the sandbox
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={WIDTH + 2},{height}",
                f"--screenshot={out}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", help="a comment body to render (default: run prbot demo)")
    parser.add_argument("--pair", nargs=2, metavar=("BASE", "HEAD"), help="vLLM versions")
    parser.add_argument("--baseline", metavar="REV", help="also render --pair with prbot at REV")
    parser.add_argument("--out", default="/tmp/prbot-comment.png", help="the PNG to write")
    parser.add_argument("--open-folds", action="store_true", help="show every <details> open")
    parser.add_argument("--height", type=int, default=1400, help="window height in pixels")
    args = parser.parse_args()
    if args.markdown:
        markdown = Path(args.markdown).read_text()
    elif args.pair:
        markdown = pair_comment(*args.pair)
    else:
        markdown = demo_comment()
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    page = out.with_suffix(".html")
    page.write_text(render_page(markdown, open_folds=args.open_folds))
    ours = figures(markdown, page.read_text())
    for name, value in ours.items():
        print(f"{name}: {value:,}")
    screenshot(page, out, args.height)
    print(f"{out} ({out.stat().st_size:,} bytes); the HTML is {page}")
    if args.pair and args.baseline:
        before = pair_comment(*args.pair, revision=args.baseline)
        theirs = figures(before, render_page(before, open_folds=False))
        print(f"baseline {args.baseline}: {theirs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
