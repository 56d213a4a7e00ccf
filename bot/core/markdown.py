"""Neutralising user-written text before it goes into a GitHub comment.

Titles, bodies, paths and messages come from PR authors. In a comment they must not open
HTML, links, images or tables, ping people (``@user``) or cross-reference issues (``#12``).
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

# Characters that start emphasis, code, links, tables or strikethrough anywhere in a line.
# "(" and "!" need no escape once "[" and "]" are escaped.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# Characters that only matter at the start of a line (headings, lists, quotes).
_LINE_START_SPECIAL = re.compile(r"^(\s*)([#+\-=>]|\d+\.)")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_ISSUE_REF = re.compile(r"(?<!&)#(?=\d)")
# GFM links "scheme://..." and "www." by itself. A backslash before the ":" or "." keeps the
# text plain and copies intact (a joiner inside the scheme made a pasted URL unusable).
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(://)|(?<![a-z0-9])(www)\.")
_ZERO_WIDTH_JOINER = "\u200d"
# Characters a reader cannot see or that reorder what they see: C0 and C1 controls (BEL,
# ESC), bidi embeddings, overrides and isolates (U+202E shows "txt.exe" as "exe.txt"), and
# zero-width ones. Each is shown as its code point, "<U+202E>", wherever user text goes.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)


def visible(text: str) -> str:
    """``text`` with every invisible or reordering character written as ``<U+XXXX>``
    (tab, newline and carriage return stay: each caller decides what a line is)."""
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def _escape_line_start(match: re.Match[str]) -> str:
    marker = match.group(2)
    if marker.endswith("."):  # "1." starts an ordered list; "1\\." does not
        return match.group(1) + marker[:-1] + "\\."
    return match.group(1) + "\\" + marker


def escape_text(value: object) -> Markup:
    """Plain text, safe in a Markdown paragraph or table cell."""
    if isinstance(value, Markup):
        return value
    text = visible(str(value))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MENTION.sub("@" + _ZERO_WIDTH_JOINER, text)
    text = _ISSUE_REF.sub("#" + _ZERO_WIDTH_JOINER, text)
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    # After the pass above, so its own backslash is not doubled.
    text = _AUTOLINK.sub(lambda m: "\\://" if m.group(1) else m.group(2) + "\\.", text)
    text = text.replace("\r", " ").replace("\n", " ")
    text = _LINE_START_SPECIAL.sub(_escape_line_start, text)
    return Markup(text)


def code_span(value: object) -> Markup:
    """Text shown as inline code; backticks inside are fenced with a longer run."""
    # Code spans show their content literally (no entities, no HTML), so only the table
    # separator needs care: GitHub honours "\\|" inside a code span in a table cell.
    text = visible(str(value)).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Markup(f"{fence}{pad}{text}{pad}{fence}")


def html_text(value: object) -> Markup:
    """Text inside an HTML element such as a one-line ``<summary>``, where GitHub parses no
    Markdown: a backslash or backtick would show literally, so only HTML is escaped."""
    if isinstance(value, Markup):
        return value
    text = visible(str(value)).replace("\r", " ").replace("\n", " ")
    text = str(escape(text))
    text = _MENTION.sub("@" + _ZERO_WIDTH_JOINER, text)
    return Markup(_ISSUE_REF.sub("#" + _ZERO_WIDTH_JOINER, text))


def html_code(value: object) -> Markup:
    """Machine text (a path, a name) inside an HTML element: ``<code>`` with HTML escaping."""
    text = visible(str(value)).replace("\r", " ").replace("\n", " ")
    return Markup(f"<code>{escape(text)}</code>")


def code_block(value: object, language: str = "") -> Markup:
    """A fenced block (e.g. a ready patch); fences inside the text cannot close it. Invisible
    and bidi characters are shown as code points here too (a patch carrying one would not
    apply as shown, which is the point: a reviewer must see it)."""
    text = visible(str(value))
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return Markup(f"{fence}{language}\n{text.rstrip()}\n{fence}")


# A fence line as CommonMark reads it: up to three spaces, then three or more ` or ~.
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _still_open(text: str) -> tuple[str | None, int]:
    """The fence left open at the end of ``text`` (or None), and how many <details> are open."""
    fence: str | None = None
    details = 0
    for line in text.split("\n"):
        match = _FENCE_LINE.match(line)
        if fence is not None:
            # Only a run of the same character, at least as long, with nothing after it closes.
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                if not match.group(2).strip():
                    fence = None
            continue
        if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
            continue
        details += line.count("<details>") - line.count("</details>")
    return fence, max(details, 0)


def _closing(text: str) -> str:
    fence, details = _still_open(text)
    closing = f"\n{fence[0] * len(fence)}" if fence else ""
    return closing + "\n</details>" * details


def _block_ends(text: str) -> list[int]:
    """Offsets of the blank lines outside fences: where one block (a paragraph, a table, a
    whole fold) has ended and the next has not begun. A cut there splits no table or patch."""
    ends: list[int] = []
    fence: str | None = None
    offset = 0
    for line in text.split("\n"):
        match = _FENCE_LINE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                if not match.group(2).strip():
                    fence = None
        elif match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
        elif not line.strip() and offset:
            ends.append(offset)
        offset += len(line) + 1
    return ends


def truncate_markdown(text: str, limit: int, note: str) -> str:
    """``text`` cut to at most ``limit`` characters, still well formed.

    The cut falls on a block boundary (a blank line outside any fence) when one is in the
    second half of the room, else at a line end. A fence or ``<details>`` fold left open by
    the cut would swallow whatever follows (the next section, the footer), so both are closed
    before ``note`` (plain text, escaped here).
    """
    if len(text) <= limit:
        return text
    tail = f"\n\n{escape_text(note)}\n"
    room = limit - len(tail)
    blocks = _block_ends(text[: max(room, 0)])
    for _ in range(8):  # each round only shortens the cut; two rounds are the usual
        if room <= 0:
            break
        block_end = next((end for end in reversed(blocks) if end <= room), -1)
        if block_end >= room // 2:
            cut = text[:block_end]
        else:
            cut = text[:room]
            line_end = cut.rfind("\n")
            if line_end >= room // 2:
                cut = cut[:line_end]
        cut = cut.rstrip("\n")
        closing = _closing(cut)
        if len(cut) + len(closing) + len(tail) <= limit:
            return cut + closing + tail
        room = limit - len(tail) - len(closing)
    return tail.strip()[:limit]
