"""Markdown rendered as GitHub renders it: cmark-gfm (the ``cmarkgfm`` package) with GitHub's
extensions. Raw HTML is kept (GitHub keeps it, then sanitises), so tests see what a user's
text would have become."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

GFM_EXTENSIONS = ["autolink", "table", "strikethrough", "tagfilter", "tasklist"]
ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")


def render_gfm(text: str) -> str:
    return cmarkgfm.markdown_to_html_with_extensions(
        text, options=Options.CMARK_OPT_UNSAFE, extensions=GFM_EXTENSIONS
    )


class HtmlShape(HTMLParser):
    """Tags opened and closed, link targets, and the text of every <summary>."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.opened: dict[str, int] = {}
        self.closed: dict[str, int] = {}
        self.hrefs: list[str] = []
        self.summaries: list[str] = []
        self.summary_raw: list[str] = []
        self._in_summary = 0
        self.feed(html)
        self.close()
        for raw in re.findall(r"<summary>(.*?)</summary>", html, re.S):
            self.summary_raw.append(raw)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.opened[tag] = self.opened.get(tag, 0) + 1
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")
        if tag == "summary":
            self._in_summary += 1
            self.summaries.append("")

    def handle_endtag(self, tag: str) -> None:
        self.closed[tag] = self.closed.get(tag, 0) + 1
        if tag == "summary":
            self._in_summary -= 1

    def handle_data(self, data: str) -> None:
        if self._in_summary:
            self.summaries[-1] += data
