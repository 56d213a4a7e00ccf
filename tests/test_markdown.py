import re

from github_render import ZERO_WIDTH, HtmlShape, render_gfm

from bot.core.markdown import code_block, code_span, escape_text, html_code, html_text


def test_html_and_links_are_inert():
    out = str(escape_text("<script>x</script> [click](http://evil) ![img](http://x)"))
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "[click]" not in out and "\\[click\\]" in out


def test_mentions_and_issue_refs_do_not_notify():
    out = str(escape_text("@team please see #123 and org/repo#45"))
    assert "@team" not in out and "#123" not in out and "#45" not in out


def test_line_start_markup_is_escaped_and_newlines_folded():
    assert str(escape_text("# title\n- item")) == "\\# title - item"
    assert str(escape_text("1. first")) == "1\\. first"


def test_table_pipes_escaped():
    assert "\\|" in str(escape_text("a|b"))


def test_code_span_survives_backticks_and_pipes():
    assert str(code_span("a`b")) == "``a`b``"
    assert str(code_span("x|y")) == "`x\\|y`"
    assert str(code_span("a>=1 <b>")) == "`a>=1 <b>`"


def test_code_block_cannot_be_closed_from_inside():
    block = str(code_block("```\nescape\n```", "diff"))
    assert block.startswith("````diff\n") and block.endswith("\n````")


def test_bare_urls_are_not_autolinked_and_copy_intact():
    text = "see http://evil.example/a_b?c=1&d=2 and www.evil.example, HTTPS://x.org _www.x.org_"
    html = render_gfm(str(escape_text(text)))
    assert "<a " not in html  # GitHub's parser links none of them
    # What a reader selects and copies is the URL itself: no joiner, no backslash.
    assert ZERO_WIDTH.search(html) is None
    assert html == "<p>" + text.replace("&", "&amp;") + "</p>\n"


def test_html_text_and_code_escape_html_only():
    assert str(html_text("x86_64 <b>")) == "x86_64 &lt;b&gt;"
    assert str(html_code("a<b>`_c")) == "<code>a&lt;b&gt;`_c</code>"
    shape = HtmlShape(
        render_gfm(
            f"<details><summary>{html_code('`cuda`')} {html_text('x_y')}"
            "</summary>\n\nbody\n</details>\n"
        )
    )
    assert shape.summaries == ["`cuda` x_y"] and shape.opened["code"] == 1


def test_issue_refs_and_mentions_inside_a_summary_do_not_link_or_notify():
    # GitHub links #123 and notifies @team in an HTML <summary> just as in Markdown text.
    text = "fixes #123 and org/repo#45 for @team"
    out = str(html_text(text))
    assert re.search(r"#\d", out) is None and "@team" not in out
    assert ZERO_WIDTH.sub("", out) == text  # what a reader sees is the text as written


def test_truncation_closes_the_fence_and_folds_it_cuts_inside():
    from bot.core.markdown import truncate_markdown

    body = "<details><summary>Patch</summary>\n\n````diff\n" + "+ line\n" * 5_000 + "````\n"
    body += "</details>\n"
    out = truncate_markdown(body, 2_000, "…cut <here> @team")
    assert len(out) <= 2_000
    # The fence is closed by a fence as long as the one that opened it, then the fold.
    assert out.split("\n")[-6:-2] == ["+ line", "````", "</details>", ""]
    assert "&lt;here&gt;" in out and "@team" not in out  # the note is escaped too


def test_truncation_knows_an_info_string_does_not_close_a_fence():
    from bot.core.markdown import truncate_markdown

    text = "```\ncode\n``` not a close\n" + "more code\n" * 500
    out = truncate_markdown(text, 300, "cut")
    assert "\n```\n\ncut" in out  # still open at the cut: closed by prbot


def test_short_text_is_not_touched():
    from bot.core.markdown import truncate_markdown

    assert truncate_markdown("```\nopen", 100, "cut") == "```\nopen"


def test_invisible_and_bidi_characters_are_shown_as_code_points_everywhere():
    from bot.core.markdown import code_block, code_span, escape_text, html_code, html_text

    raw = "a\u202eb\u2066c\u200bd\x07e\x1bf\ufeffg\x85h"
    shown = "a<U+202E>b<U+2066>c<U+200B>d<U+0007>e<U+001B>f<U+FEFF>g<U+0085>h"
    assert str(code_span(raw)) == f"`{shown}`"
    assert str(code_block(raw)) == f"```\n{shown}\n```"
    escaped = shown.replace("<", "&lt;").replace(">", "&gt;")
    for render in (escape_text, html_text):
        assert str(render(raw)) == escaped
    assert str(html_code(raw)) == f"<code>{escaped}</code>"
    assert str(code_block("tab\tand\nlines")) == "```\ntab\tand\nlines\n```"
