from bot.commands import Command, parse_commands


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


def test_empty_and_none_bodies():
    assert parse_commands(None) == []
    assert parse_commands("") == []


def test_windows_line_endings():
    assert parse_commands("hi\r\n/recheck now\r\n") == [Command("recheck", "now")]
