"""Screenshot prbot's comment as GitHub would show it (run by hand, never in CI).

    uv run python benchmarks/screenshot_comment.py [--markdown FILE] [--out PNG] [--open-folds]

Without ``--markdown`` it runs ``prbot demo`` (about a minute: the whole webhook path on the
local GitHub test server) and takes the comment it posted. The Markdown is rendered with
cmark-gfm (``cmarkgfm``, GitHub's parser, with GitHub's extensions), styled by a small
stylesheet of our own modelled on github-markdown-css (GitHub's fonts, tables, code and fold
styles at the 780-pixel width of a PR conversation), and photographed with Debian's headless
Chromium (``apt-get install -y chromium``). The PNG goes to ``--out`` (default
``/tmp/prbot-comment.png``) with the HTML next to it; neither is committed.
"""

from __future__ import annotations

import argparse
import html
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
    parser.add_argument("--out", default="/tmp/prbot-comment.png", help="the PNG to write")
    parser.add_argument("--open-folds", action="store_true", help="show every <details> open")
    parser.add_argument("--height", type=int, default=1400, help="window height in pixels")
    args = parser.parse_args()
    markdown = Path(args.markdown).read_text() if args.markdown else demo_comment()
    out = Path(args.out).resolve()
    page = out.with_suffix(".html")
    page.write_text(render_page(markdown, open_folds=args.open_folds))
    screenshot(page, out, args.height)
    print(f"{out} ({out.stat().st_size:,} bytes); the HTML is {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
