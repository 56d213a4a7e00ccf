"""Raw HTML as a browser reads GitHub's rendered comment: what it leaves open hides the rest."""

from __future__ import annotations

import pytest

from bot.events.hidden_html import RawHtml


def state_after(*pieces: str) -> bool:
    html = RawHtml()
    for piece in pieces:
        html.feed(piece)
    return html.hidden


@pytest.mark.parametrize(
    "pieces",
    [
        ("<!--",),
        ("<!-- a --", "> still open"),  # a "-->" split over two pieces does not close
        ("<?php ",),
        ("<!DOCTYPE",),
        ('<div title="',),
        ("<script>", "</scrip"),
        ("<pre>",),
        ("<code><b>", "</b>"),
        ("<plaintext>", "</plaintext>"),
        ("</ x",),
    ],
)
def test_what_stays_open_hides_what_follows(pieces):
    assert state_after(*pieces)


@pytest.mark.parametrize(
    "pieces",
    [
        ("<!-- a -->",),
        ("<!-->",),  # an empty comment in HTML
        ("<!--->",),
        ("<!-- a --!>",),
        ("<!--", "x", "-->"),
        ("<? a >",),
        ('<div title="<!--">',),  # inside an attribute value, "<!--" opens nothing
        ("<div title='a>b'>",),
        ("<script>x</script >",),
        ("<pre><code>", "</code></pre>"),
        ("<img src=x.png/>",),
        ("<details><summary>x</summary>",),
        ("a < b",),
        ("</>",),
    ],
)
def test_what_is_closed_leaves_text_visible(pieces):
    assert not state_after(*pieces)


def test_a_comment_closes_inside_a_later_tag_as_html_says():
    # "-->" ends a comment wherever it appears in raw HTML, even inside what looks like a tag.
    assert not state_after("<!--", '<div title="-->">')
