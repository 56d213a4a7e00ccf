import pytest

from bot.events.commands import Command, parse_commands


def test_recheck_with_reason():
    assert parse_commands("/recheck flaky runner") == [Command("recheck", "flaky runner")]


def test_command_among_prose_lines():
    body = "Thanks!\n\n/recheck\nmore text"
    assert parse_commands(body) == [Command("recheck")]


def test_commands_in_code_blocks_quotes_and_inline_code_are_ignored():
    body = "\n".join(
        [
            "```",
            "/recheck",
            "```",
            "~~~~",
            "/recheck",
            "~~~~",
            "> /recheck",
            "    /recheck",
            "`/recheck`",
            "Try `/recheck` next time",
        ]
    )
    assert parse_commands(body) == []


def test_unclosed_fence_hides_the_rest():
    assert parse_commands("```python\n/recheck\n") == []


def test_unknown_commands_are_marked_not_dropped():
    assert parse_commands("/lgtm\n/recheck") == [Command("lgtm", known=False), Command("recheck")]


def test_slash_inside_a_sentence_is_not_a_command():
    assert parse_commands("please /recheck this") == []
    assert parse_commands("see /usr/bin") == []


def test_empty_none_and_odd_bodies():
    assert parse_commands(None) == []
    assert parse_commands("") == []
    assert parse_commands(42) == [] and parse_commands(["/recheck"]) == []
    assert parse_commands("\0/recheck\0") == []


def test_windows_line_endings():
    assert parse_commands("hi\r\n/recheck now\r\n") == [Command("recheck", "now")]


# --- what a reader does not see is never a command (read with a CommonMark parser) ----------

HIDDEN = {
    "html comment": "Thanks!\n\n<!--\n/recheck\n-->\n",
    "html comment inline": "Thanks! <!-- \n/recheck\n --> done",
    "pre block": "<pre>\n/recheck\n</pre>\n",
    "pre inline": "see this <pre>\n/recheck\n</pre>",
    "html block": '<div align="right">\n/recheck\n</div>\n',
    "fence with an info string on its 'closing' line": "```\nx\n``` text\n/recheck\n```\n",
    "longer fence": "````\n```\n/recheck\n````\n",
    "lazy continuation of a quote": "> I think we should\n/recheck\n",
    "nested quote": "> > /recheck\n",
    "quote in a list item": "- > /recheck\n",
    "indented code after a paragraph break": "Look:\n\n    /recheck\n",
    "inline code spanning lines": "`\n/recheck\n`",
    "a link": "[/recheck](https://example.invalid)",
    "an image": "![/recheck](x.png)",
    "a heading": "# /recheck\n",
    "a setext heading": "/recheck\n---\n",
    "a table header": "| /recheck | why |\n| --- | --- |\n| a | b |\n",
    "a table cell": "| command | why |\n| --- | --- |\n| /recheck | b |\n",
    "prbot's own report": "<!-- prbot:report -->\n<!-- prbot:head=abc -->\n/recheck\n",
    # The HTML block ends with its list item or quote, but the browser's comment does not:
    # it runs on to the next raw "-->" or the end of the page (issue 21, item 12).
    "a comment a list item leaves open": "- <!--\n\n/recheck\n",
    "a comment a quote leaves open": "> <!--\n\n/recheck\n",
    "a comment a nested list leaves open": "- a\n  - <!-- b\n\n/recheck\n",
    "a '-->' in text closes nothing": "- <!--\n\n-->\n\n/recheck\n",
    "an element shown as code left open": "<code>\n\n/recheck\n",
    "a comment inside a processing instruction": "<? a > <!-- b ?>\n\n/recheck\n",
}


@pytest.mark.parametrize("body", HIDDEN.values(), ids=HIDDEN.keys())
def test_a_command_a_reader_does_not_see_never_fires(body):
    assert parse_commands(body) == []


VISIBLE = {
    "paragraph": ("/recheck", "recheck", ""),
    "after a quote and a blank line": ("> quoted\n\n/recheck now", "recheck", "now"),
    "after a closed fence": ("```\ncode\n```\n/recheck", "recheck", ""),
    "list item": ("- /recheck flaky", "recheck", "flaky"),
    "ordered list item": ("1. /recheck", "recheck", ""),
    "second line of a paragraph": ("Thanks for the review\n/recheck", "recheck", ""),
    "after a hard break": ("Thanks  \n/recheck", "recheck", ""),
    "emphasised": ("**/recheck** please", "recheck", "please"),
    "inside a details fold": (
        "<details>\n<summary>why</summary>\n\n/recheck\n\n</details>",
        "recheck",
        "",
    ),
    "argument with inline code": ("/recheck `runner-3` died", "recheck", "runner-3 died"),
    "after a closed comment in a list item": ("- <!-- a -->\n\n/recheck", "recheck", ""),
    "after an empty comment": ("<!-->\n\n/recheck", "recheck", ""),
    "after an unclosed inline '<!--' (text, not HTML)": ("- a <!--\n\n/recheck", "recheck", ""),
    "after an image tag": ('<img src="x.png" width="200">\n\n/recheck', "recheck", ""),
    "after a line break tag": ("line<br>\n/recheck", "recheck", ""),
    "a comment closed inside a later tag": (
        '- <!--\n\n<div title="-->">\n\n/recheck',
        "recheck",
        "",
    ),
}


@pytest.mark.parametrize(("body", "name", "argument"), VISIBLE.values(), ids=VISIBLE.keys())
def test_a_command_a_reader_sees_fires(body, name, argument):
    assert parse_commands(body) == [Command(name, argument)]


# Each gets an answer (the walk is bounded); what the answer may be is the promise's.
HOSTILE_BODIES = {
    # A quote at any depth is never a command.
    "deep quotes": ("> " * 5_000 + "/recheck", [[]]),
    # The last line continues the deepest item's paragraph: read or not, never a crash.
    "deep lists": (
        "".join("  " * i + "- x\n" for i in range(2_000)) + "/recheck",
        [[], [Command("recheck")]],
    ),
    "brackets": ("[" * 60_000, [[]]),
    "emphasis": ("*a " * 20_000, [[]]),
    "backticks": ("`" * 60_000, [[]]),
    "html": ("<a " * 20_000, [[]]),
}


@pytest.mark.parametrize(("body", "allowed"), HOSTILE_BODIES.values(), ids=HOSTILE_BODIES.keys())
def test_hostile_bodies_give_an_answer(body, allowed):
    assert parse_commands(body) in allowed


def test_a_body_over_githubs_limit_is_not_a_comment():
    assert parse_commands("/recheck\n" + "x" * 70_000) == []


def test_a_command_in_a_wall_of_text_is_not_read():
    assert parse_commands("/recheck\n" + "[" * 3_000) == []
    assert parse_commands("[" * 5_000 + "\n\n/recheck") == [Command("recheck")]


def test_a_long_reason_is_cut():
    [command] = parse_commands("/recheck " + "why " * 400)
    assert command.name == "recheck" and len(command.argument) == 200


VLLM_SPELLINGS = {"recheck": "recheck", "approve_gpu": "approve_gpu", "approve-gpu": "approve_gpu",
                  "fix": "fix", "help": "help"}  # fmt: skip


@pytest.mark.parametrize("body", ["/amd-ci run", "/ci cancel", "/ci run", "/ci retry", "/retest"])
def test_other_bots_commands_are_no_near_miss(body):
    [command] = parse_commands(body, VLLM_SPELLINGS)
    assert not command.known and command.suggestion is None and not command.needs_reply


def test_a_many_word_alias_lends_its_first_word_no_hints():
    spellings = {**VLLM_SPELLINGS, "ci run": "recheck"}
    [cancel] = parse_commands("/ci cancel", spellings)
    assert cancel.suggestion is None and not cancel.needs_reply
    [run] = parse_commands("/ci run now", spellings)
    assert run.known and run.name == "recheck" and run.typed == "/ci run"


@pytest.mark.parametrize(
    ("body", "typed", "suggestion"),
    [("/rechek", "/rechek", "recheck"), ("/aprove-gpu", "/aprove-gpu", "approve-gpu")],
)
def test_near_misses_of_prbots_own_commands(body, typed, suggestion):
    [command] = parse_commands(body, VLLM_SPELLINGS)
    assert command.suggestion == suggestion and command.as_typed == typed and command.needs_reply


def test_every_command_knows_how_it_was_typed():
    found = parse_commands("/approve-gpu\n\n/prbot fix docs\n\n/prbot", VLLM_SPELLINGS)
    assert [(c.name, c.as_typed) for c in found] == [
        ("approve_gpu", "/approve-gpu"),
        ("fix", "/prbot fix"),
        ("help", "/prbot"),
    ]
