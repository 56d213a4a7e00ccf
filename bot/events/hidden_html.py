"""What the raw HTML in a comment hides, as a browser reads GitHub's rendered page.

GitHub renders a comment as CommonMark and passes its raw HTML through. A browser reads
that HTML as one stream: a ``<!--`` the Markdown left unclosed (inside a list item or a
quote, where the HTML block ends with its container) keeps the comment open past the
container, to the next ``-->`` in raw HTML or the end of the page, since Markdown text is
escaped on the way out and its ``-->`` closes nothing. :class:`RawHtml` follows that stream
through the raw HTML tokens only, in document order, and says whether text met now is
hidden: inside a comment, a bogus comment (``<?…>``, ``<!…>``), an unfinished tag, a
raw-text element (``<script>``…) or an element shown as code or not at all (``<pre>``,
``<code>``, ``<template>``…). Where it cannot tell, it says hidden: a command missed can be
typed again, a command read from hidden text cannot be taken back.
"""

from __future__ import annotations

import re

# Elements whose content a reader sees as code, or not at all. GitHub's tag filter shows
# some of these as text instead (``&lt;script>``); reading them as hidden only misses commands.
_LITERAL = frozenset(
    "pre code kbd samp tt var textarea script style template xmp listing title iframe "
    "noembed noframes noscript".split()
)
# Elements whose content the tokenizer reads as raw text, to their end tag only.
_RAW_TEXT = frozenset("script style textarea title xmp iframe noembed noframes noscript".split())
_TAG_NAME = re.compile(r"[A-Za-z][^\s/>\x00]*")
_COMMENT_END = re.compile(r"--!?>")


class RawHtml:
    """The browser's tokenizer state over a comment's raw HTML, as far as hiding text goes."""

    def __init__(self) -> None:
        self._state = "data"  # data | comment | bogus | tag | plaintext | rawtext
        self._raw_text_end: re.Pattern[str] | None = None
        self._tag: str | None = None  # the tag being read, lower case ("/pre" for an end tag)
        self._quote: str | None = None  # inside an attribute value quoted with this
        self._literal: list[str] = []  # open elements from _LITERAL

    @property
    def hidden(self) -> bool:
        """Whether text met now is hidden from a reader (or shown as code)."""
        return self._state != "data" or bool(self._literal)

    def feed(self, html: str) -> None:
        at, end = 0, len(html)
        while at < end:
            state = self._state
            if state == "plaintext":
                return
            if state == "comment":
                found = _COMMENT_END.search(html, at)
                if found is None:
                    return
                self._state, at = "data", found.end()
            elif state == "bogus":
                close = html.find(">", at)
                if close < 0:
                    return
                self._state, at = "data", close + 1
            elif state == "rawtext":
                assert self._raw_text_end is not None
                found = self._raw_text_end.search(html, at)
                if found is None:
                    return
                self._state, self._tag, self._quote = "tag", "/" + found.group(1).lower(), None
                at = found.end()
            elif state == "tag":
                at = self._read_tag(html, at)
            else:
                at = self._read_data(html, at)

    def _read_data(self, html: str, at: int) -> int:
        start = html.find("<", at)
        if start < 0:
            return len(html)
        rest = html[start + 1 : start + 5]
        if html.startswith("<!--", start):
            # "<!-->" and "<!--->" are whole (empty) comments in HTML.
            if html.startswith(">", start + 4) or html.startswith("->", start + 4):
                return start + (5 if html[start + 4] == ">" else 6)
            self._state = "comment"
            return start + 4
        if rest[:1] in ("!", "?"):
            self._state = "bogus"
            return start + 2
        closing = rest[:1] == "/"
        name = _TAG_NAME.match(html, start + 1 + closing)
        if name is None:
            if closing and html.startswith(">", start + 2):  # "</>" is dropped
                return start + 3
            if closing:
                self._state = "bogus"
                return start + 2
            return start + 1  # a lone "<" is text
        self._state, self._quote = "tag", None
        self._tag = ("/" if closing else "") + name.group().lower()
        return name.end()

    def _read_tag(self, html: str, at: int) -> int:
        end = len(html)
        while at < end:
            if self._quote is not None:
                close = html.find(self._quote, at)
                if close < 0:
                    return end
                self._quote, at = None, close + 1
                continue
            char = html[at]
            if char == ">":
                self._end_tag(self_closing=html[at - 1 : at] == "/")
                return at + 1
            if char == "=":
                at += 1
                while at < end and html[at] in " \t\n\f\r":
                    at += 1
                if at < end and html[at] in "\"'":
                    self._quote = html[at]
                    at += 1
                continue
            at += 1
        return end

    def _end_tag(self, *, self_closing: bool) -> None:
        tag = self._tag or ""
        self._state, self._tag = "data", None
        if tag.startswith("/"):
            name = tag[1:]
            if name in self._literal:
                # The end tag closes the innermost open element of that name, and those in it.
                del self._literal[len(self._literal) - 1 - self._literal[::-1].index(name) :]
            return
        if tag == "plaintext":
            self._state = "plaintext"
        elif tag in _RAW_TEXT:
            self._state = "rawtext"
            self._raw_text_end = re.compile(rf"</({re.escape(tag)})(?=[\s/>])", re.I)
        if tag in _LITERAL and not self_closing:
            self._literal.append(tag)
