"""Slash commands in PR comments, parsed into typed values before anything acts on them.

Only lines that start with ``/`` outside code blocks, inline code and quotes count, so a
command quoted in a reply or shown in a code sample is never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KNOWN_COMMANDS = frozenset({"recheck"})

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_COMMAND = re.compile(r"^/([a-z][a-z0-9_-]*)(?:[ \t]+(.*))?$")
_INLINE_CODE = re.compile(r"`+[^`]*`+")


@dataclass(frozen=True)
class Command:
    name: str
    argument: str = ""
    known: bool = True


def _visible_lines(body: str) -> list[str]:
    lines, fence = [], None
    for line in body.replace("\r\n", "\n").split("\n"):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
            continue
        if fence is not None:
            if match and match.group(1).startswith(fence):
                fence = None
            continue
        if line.startswith("    ") or line.startswith("\t"):  # indented code block
            continue
        if line.lstrip().startswith(">"):  # quoted reply
            continue
        lines.append(_INLINE_CODE.sub("", line).strip())
    return lines


def parse_commands(body: str | None) -> list[Command]:
    """Every command line in a comment body, in order; unknown ones are marked, not dropped."""
    found = []
    for line in _visible_lines(body or ""):
        match = _COMMAND.match(line)
        if match:
            name = match.group(1)
            found.append(Command(name, (match.group(2) or "").strip(), name in KNOWN_COMMANDS))
    return found
