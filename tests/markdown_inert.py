"""What a Markdown text would make live on GitHub, read with a CommonMark parser.

Shared by the tests that check what prbot sends to GitHub (comment, check run): anything
listed here is user text that came through unescaped.
"""

from __future__ import annotations

import re

from github_render import HtmlShape, render_gfm
from markdown_it import MarkdownIt
from markdown_it.token import Token

# The HTML prbot's own templates write; anything else in the output came from a user.
OWN_TAGS = {"details", "summary", "sub", "code"}
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
_COMMENT = re.compile(r"<!--(.*?)-->", re.S)
# GitHub links these by itself in plain text: @mentions, bare URLs, www. hosts.
_MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")


def _tokens(tokens: list[Token]):
    for token in tokens:
        yield token
        if token.children:
            yield from _tokens(token.children)


def live_markup(text: str, *, own_links: str) -> list[str]:
    """Every image, link (not under ``own_links``), foreign HTML tag or mention in ``text``."""
    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    found = []
    for token in _tokens(parser.parse(text)):
        if token.type == "image":
            found.append(f"image {token.attrGet('src')}")
        elif token.type == "link_open":
            href = str(token.attrGet("href") or "")
            if not href.startswith(own_links):
                found.append(f"link {href}")
        elif token.type in ("html_inline", "html_block"):
            content = token.content
            for comment in _COMMENT.findall(content):
                if not comment.strip().startswith("prbot:"):
                    found.append(f"html comment {comment!r}")
            for _, tag in _TAG.findall(_COMMENT.sub("", content)):
                if tag.lower() not in OWN_TAGS:
                    found.append(f"html <{tag}>")
        elif token.type == "text":
            if _MENTION.search(token.content):
                found.append(f"mention in {token.content!r}")
    # Bare URLs: GitHub's own parser (cmark-gfm's autolink extension) decides what it links.
    found += [
        f"link {href}"
        for href in HtmlShape(render_gfm(text)).hrefs
        if not href.startswith(own_links) and f"link {href}" not in found
    ]
    return found
