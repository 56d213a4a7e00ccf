"""Slash commands in PR comments, parsed into typed values before anything acts on them.

A command is a line starting with ``/`` in a paragraph a reader sees. The comment is read with
a CommonMark parser (markdown-it-py, tables on as GitHub has them), so only what GitHub shows as
paragraph text counts: paragraphs and list items, but never quotes (lazy continuation lines
included), fenced or indented code, inline code, HTML blocks and comments, ``<pre>`` and
friends, headings or table cells. Line-based guesses get these wrong (a fence "closed" by
```` ``` text ```` is still open). The raw HTML of the whole comment, quotes and list items
included, is then read in order as a browser reads GitHub's page (bot/events/hidden_html.py):
a ``<!--`` a list item leaves open hides every paragraph after it. prbot's own comments carry
its marker and are never read.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.core.markdown import code_span
from bot.events.hidden_html import RawHtml

# Every way to type a command -> the command it runs. A repository's rules extend it with
# aliases of its own (``commands.recheck.aliases: ["rerun-report"]``); see
# bot.report.rules.CommandRules.spellings.
DEFAULT_SPELLINGS: Mapping[str, str] = {"recheck": "recheck", "fix": "fix", "help": "help"}
KNOWN_COMMANDS = frozenset(DEFAULT_SPELLINGS.values())
# "/prbot <command>" addresses prbot by name: an unknown word after it always gets an answer.
BOT_PREFIX = "prbot"
# Spellings that count only after "/prbot": a bare "/help" is Prow's help-wanted label.
# A bare "/fix" is too common a word (and another bot's) to push commits on.
ADDRESSED_ONLY = frozenset({"help", "fix"})
# How close a typed word must be to the first word of one of prbot's own spellings to count
# as a near-miss ("/rechek"). Only the first word is compared, and only with prbot's own
# spellings: "/amd-ci run" and "/ci cancel" are other bots' commands, never prbot's typos.
NEAR_MISS_CUTOFF = 0.8

# GitHub refuses comment bodies over 65,536 characters; a longer one is not a real comment.
MAX_BODY_CHARS = 65_536
# Every comment prbot writes starts with a hidden marker of this form (bot/report/render.py).
OWN_MARKER = "<!-- prbot:"

_COMMAND = re.compile(r"^/([a-z][a-z0-9_-]*)(?:[ \t]+(.*))?$")
# Blocks whose paragraphs a reader does not see as plain prose.
_HIDING_BLOCKS = {"blockquote_open": 1, "blockquote_close": -1, "table_open": 1, "table_close": -1}


@dataclass(frozen=True)
class Command:
    """One command line. ``name`` is the command it runs when ``known``, else the word typed;
    ``suggestion`` is the spelling it was probably meant as; ``addressed``: "/prbot ...";
    ``typed``: the command as the commenter typed it ("/approve-gpu", "/prbot fix"), which
    every reply names (never the internal name)."""

    name: str
    argument: str = ""
    known: bool = True
    suggestion: str | None = None
    addressed: bool = False
    # How it was typed is for replies; two commands that run the same are equal.
    typed: str = field(default="", compare=False)

    @property
    def as_typed(self) -> str:
        if self.typed:
            return self.typed
        return f"/{BOT_PREFIX} {self.name}" if self.addressed else f"/{self.name}"

    @property
    def needs_reply(self) -> bool:
        """An unknown "/prbot ..." or a near-miss of a known command: say the right one."""
        return not self.known and (self.addressed or self.suggestion is not None)


# A body with no line that could start a command is not parsed at all (most comments).
_MAYBE_COMMAND_LINE = re.compile(r"(?m)^[ \t>*_+\-0-9.)]*/[a-z]")
_MAYBE_COMMAND = re.compile(r"(?m)^[ \t*_]*/[a-z]")
# markdown-it-py costs tens of microseconds per token, and its link rule is quadratic on
# hostile text (60,000 "![" take over ten seconds), so inline parsing runs without it (a
# line that starts with "/" starts no link), and only on paragraphs that could hold a command
# (each at most this long: a command is a short line, not part of a wall of text) or raw
# HTML (which may hide what follows). A whole 65,536-character comment of hostile text
# costs about 0.25 s.
MAX_PARAGRAPH_CHARS = 2_000
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


def _paragraph_lines(children: list[Token], html: RawHtml) -> Iterator[str]:
    """The lines of one paragraph that start with plain text a reader sees.

    A line starting with anything else (inline code, a link, an image, HTML) is not a
    command; text the raw HTML hides (:mod:`bot.events.hidden_html`) is not read, and
    every raw HTML piece is fed to ``html``, so what it leaves open hides what follows.
    """
    parts: list[str] = []
    starts_with_text: bool | None = None
    for child in [*children, Token("softbreak", "", 0)]:
        if child.type in ("softbreak", "hardbreak"):
            if starts_with_text:
                yield "".join(parts).strip()
            parts, starts_with_text = [], None
            continue
        if child.type == "html_inline":
            html.feed(child.content)
            starts_with_text = starts_with_text or False
        elif html.hidden:
            starts_with_text = starts_with_text or False
        elif child.type == "text":
            if starts_with_text is None:
                starts_with_text = bool(child.content.strip()) or None
            parts.append(child.content)
        elif child.type == "code_inline":
            starts_with_text = starts_with_text or False
            parts.append(child.content)
        elif child.type not in ("em_open", "em_close", "strong_open", "strong_close"):
            starts_with_text = starts_with_text or False  # links, images


def _visible_lines(body: str) -> Iterator[str]:
    tokens = _block_parser().parse(body)
    html = RawHtml()
    quoted = 0
    for index, token in enumerate(tokens):
        quoted += _HIDING_BLOCKS.get(token.type, 0)
        if token.type == "html_block":
            html.feed(token.content)
            continue
        if token.type != "inline":
            continue
        content = token.content
        raw = "<" in content  # may hold inline HTML, which may hide what follows
        readable = (
            quoted == 0
            and tokens[index - 1].type == "paragraph_open"
            and _MAYBE_COMMAND.search(content) is not None
        )
        if not raw and (html.hidden or not readable):
            continue
        readable = readable and len(content) <= MAX_PARAGRAPH_CHARS
        if not (raw or readable):
            continue
        [inline] = _inline_parser().parseInline(content)
        lines = _paragraph_lines(inline.children or [], html)
        if readable:
            yield from lines
        else:
            for _ in lines:  # read for its HTML only
                pass


def parse_commands(body: object, spellings: Mapping[str, str] = DEFAULT_SPELLINGS) -> list[Command]:
    """Every command line in a comment body, in order; unknown ones are marked, not dropped.

    ``spellings`` maps each way to type a command (a name or an alias of one or more words,
    e.g. "ci run") to the command it runs; the longest spelling that fits a line wins.
    """
    if not isinstance(body, str) or len(body) > MAX_BODY_CHARS or OWN_MARKER in body:
        return []
    if not _MAYBE_COMMAND_LINE.search(body):
        return []
    by_length = sorted(spellings, key=lambda s: len(s.split()), reverse=True)
    found = []
    for line in _visible_lines(body):
        if _COMMAND.match(line):
            found.append(_command(line[1:], spellings, by_length))
    return found


def _command(text: str, spellings: Mapping[str, str], by_length: list[str]) -> Command:
    words = text.split()
    addressed = words[0] == BOT_PREFIX
    prefix = f"/{BOT_PREFIX} " if addressed else "/"
    if addressed:
        words = words[1:]
        if not words:  # "/prbot" alone: what can I type?
            return Command("help", addressed=True, typed=f"/{BOT_PREFIX}")
    candidates = [s for s in by_length if addressed or s not in ADDRESSED_ONLY]
    for spelling in candidates:
        size = len(spelling.split())
        if [w.lower() for w in words[:size]] == spelling.split():
            argument = " ".join(words[size:]).strip()[:MAX_ARGUMENT_CHARS]
            typed = prefix + " ".join(words[:size])
            return Command(spellings[spelling], argument, addressed=addressed, typed=typed)
    typed = words[0][:40]
    # One-word spellings only: a first word shared with a many-word alias ("/ci cancel" beside
    # "ci run") is that namespace's owner's command, not a typo of prbot's.
    single = [spelling for spelling in candidates if " " not in spelling]
    close = difflib.get_close_matches(typed.lower(), single, n=1, cutoff=NEAR_MISS_CUTOFF)
    suggestion = close[0] if close else None
    argument = " ".join(words[1:]).strip()[:MAX_ARGUMENT_CHARS]
    return Command(typed, argument, False, suggestion, addressed, prefix + typed)


# What each command does, for `/prbot help`.
DESCRIPTIONS: Mapping[str, str] = {
    "recheck": "run the checks again on the PR's current head; a reason may follow",
    "approve_gpu": "approve the GPU jobs of the PR's current head (a push needs a new approval)",
    "fix": "push the report's fix (generated docs, compiled requirements) as one commit;"
    " `docs` or `requirements` may follow",
    "help": "list the commands you may use here",
}


def _spelled(name: str, spellings: Mapping[str, str]) -> list[str]:
    return [s for s, command in spellings.items() if command == name]


def _shown(spelling: str) -> str:
    prefix = f"{BOT_PREFIX} " if spelling in ADDRESSED_ONLY else ""
    return f"`/{prefix}{spelling}`"


def reply_text(
    commenter: str,
    *,
    usable: list[str],
    spellings: Mapping[str, str] = DEFAULT_SPELLINGS,
    help_wanted: bool = False,
    misses: list[Command] = (),  # type: ignore[assignment]
) -> str:
    """prbot's one answer to a comment: hints for what it did not understand, and (when asked)
    the commands this commenter may use. ``usable`` are command names; ``misses`` come from
    :func:`parse_commands`; what they typed is shown in code spans."""
    lines = []
    for miss in misses:
        typed = code_span(miss.as_typed)
        if miss.suggestion:
            lines.append(f"{typed} is not a command here; did you mean {_shown(miss.suggestion)}?")
        else:
            lines.append(f"{typed} is not a command.")
    if help_wanted or any(m.suggestion is None for m in misses):
        if usable:
            lines.append("Commands you may use here:")
            for name in usable:
                names = ", ".join(_shown(s) for s in _spelled(name, spellings))
                lines.append(f"- {names}: {DESCRIPTIONS.get(name, name)}")
        else:
            lines.append("There are no commands you may use on this pull request.")
    body = "\n".join(lines)
    # The login is GitHub's (letters, digits, hyphens): a mention of the commenter only.
    return f"@{commenter} {body}" if commenter else body
