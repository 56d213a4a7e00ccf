"""Slash commands in PR comments, parsed into typed values before anything acts on them.

A command is a line starting with ``/`` in a paragraph a reader sees. The comment is read with
a CommonMark parser (markdown-it-py, tables on as GitHub has them), so only what GitHub shows as
paragraph text counts: paragraphs and list items, but never quotes (lazy continuation lines
included), fenced or indented code, inline code, HTML blocks and comments, ``<pre>`` and
friends, headings or table cells. Line-based guesses get these wrong (a fence "closed" by
```` ``` text ```` is still open). prbot's own comments carry its marker and are never read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

KNOWN_COMMANDS = frozenset({"recheck"})

# GitHub refuses comment bodies over 65,536 characters; a longer one is not a real comment.
MAX_BODY_CHARS = 65_536
# Every comment prbot writes starts with a hidden marker of this form (bot/report.py).
OWN_MARKER = "<!-- prbot:"

_COMMAND = re.compile(r"^/([a-z][a-z0-9_-]*)(?:[ \t]+(.*))?$")
# Blocks whose paragraphs a reader does not see as plain prose.
_HIDING_BLOCKS = {"blockquote_open": 1, "blockquote_close": -1, "table_open": 1, "table_close": -1}
# Inline HTML that shows its content as code or not at all.
_LITERAL_TAG = re.compile(
    r"<(/?)(pre|code|kbd|samp|tt|var|textarea|script|style|template|xmp|listing)\b", re.I
)


@dataclass(frozen=True)
class Command:
    name: str
    argument: str = ""
    known: bool = True


# A body with no line that could start a command is not parsed at all (most comments).
_MAYBE_COMMAND_LINE = re.compile(r"(?m)^[ \t>*_+\-0-9.)]*/[a-z]")
_MAYBE_COMMAND = re.compile(r"(?m)^[ \t*_]*/[a-z]")
# markdown-it-py costs tens of microseconds per token, and its link rule is quadratic on
# hostile text (60,000 "![" take over ten seconds). So inline parsing runs only on paragraphs
# that could hold a command, each at most this long (a command is a short line, not part of
# a wall of text), and on this many characters per comment in all.
MAX_PARAGRAPH_CHARS = 2_000
MAX_INLINE_CHARS = 8_000
# A reason ("/recheck flaky runner") is kept with the job; more than a line is not a reason.
MAX_ARGUMENT_CHARS = 200


@cache
def _block_parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").disable("inline")


@cache
def _inline_parser() -> MarkdownIt:
    # A candidate line starts with "/", so no link, image or autolink can start it; without
    # those rules every inline rule left is linear. (A line inside a link label spanning
    # lines is shown as link text: visible, so it may count.)
    return MarkdownIt("commonmark").disable(["link", "image", "autolink"])


def _paragraph_lines(children: list[Token]) -> Iterator[str]:
    """The lines of one paragraph that start with plain text, as a reader sees them.

    A line starting with anything else (inline code, a link, an image, HTML) is not a
    command; so is every line inside inline ``<pre>``/``<code>``/... tags.
    """
    parts: list[str] = []
    starts_with_text: bool | None = None
    literal = 0
    for child in [*children, Token("softbreak", "", 0)]:
        if child.type in ("softbreak", "hardbreak"):
            if starts_with_text and literal == 0:
                yield "".join(parts).strip()
            parts, starts_with_text = [], None
            continue
        if child.type == "html_inline":
            for closing, _ in _LITERAL_TAG.findall(child.content):
                literal = max(literal - 1, 0) if closing else literal + 1
        if child.type == "text":
            if starts_with_text is None:
                starts_with_text = bool(child.content.strip()) or None
            parts.append(child.content)
        elif child.type == "code_inline":
            starts_with_text = starts_with_text or False
            parts.append(child.content)
        elif child.type not in ("em_open", "em_close", "strong_open", "strong_close"):
            starts_with_text = starts_with_text or False  # links, images, HTML


def _visible_lines(body: str) -> Iterator[str]:
    tokens = _block_parser().parse(body)
    hidden = 0
    budget = MAX_INLINE_CHARS
    for index, token in enumerate(tokens):
        hidden += _HIDING_BLOCKS.get(token.type, 0)
        if (
            token.type == "inline"
            and hidden == 0
            and index > 0
            and tokens[index - 1].type == "paragraph_open"
            and len(token.content) <= min(MAX_PARAGRAPH_CHARS, budget)
            and _MAYBE_COMMAND.search(token.content)
        ):
            budget -= len(token.content)
            [inline] = _inline_parser().parseInline(token.content)
            yield from _paragraph_lines(inline.children or [])


def parse_commands(body: object) -> list[Command]:
    """Every command line in a comment body, in order; unknown ones are marked, not dropped."""
    if not isinstance(body, str) or len(body) > MAX_BODY_CHARS or OWN_MARKER in body:
        return []
    if not _MAYBE_COMMAND_LINE.search(body):
        return []
    found = []
    for line in _visible_lines(body):
        match = _COMMAND.match(line)
        if match:
            name = match.group(1)
            argument = (match.group(2) or "").strip()[:MAX_ARGUMENT_CHARS]
            found.append(Command(name, argument, name in KNOWN_COMMANDS))
    return found
