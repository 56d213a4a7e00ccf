"""PR-template lines, learned from the repository's own open PRs.

A repository's PR template ("## Purpose", "## Test Plan", "| Bug fix? | yes |", "Essential
Elements of an Effective PR Description Checklist") is left in most bodies, so two unrelated
PRs share its words. Which lines are template is not written down anywhere prbot can trust:
it is what many open PRs of the repository say word for word. Each PR keeps its short body
lines (normalised, as digests, with the words each gave); the index counts how many open PRs
have each line; a line at least TEMPLATE_MIN_PRS and TEMPLATE_SHARE of them share is the
template, and its words are taken out of the PR's text before any comparison. A line two
duplicates both pasted (the same error message) is shared by two, not by many.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Protocol

from bot.duplicates.text import tokens

# A line is the template's when this many open PRs have it, and this share of them.
TEMPLATE_MIN_PRS = 5
TEMPLATE_SHARE = 0.05
# Template lines are headings, table rows and checklist items: short. Longer lines are prose.
MAX_LINE_CHARS = 200
# Lines kept per PR (a 1 MB body has thousands; templates sit in the first screenful).
MAX_LINES = 120

_MARKUP = re.compile(r"^[\s#>*_|:=`~+-]+|[\s#>*_|:=`~.!?]+$")
_SPACE = re.compile(r"[\s|]+")


class LineStats(Protocol):
    size: int

    def line_df(self, key: str) -> int: ...


def normal_line(line: str) -> str:
    """A line as templates repeat it: case, markup around it and spacing do not matter."""
    return _SPACE.sub(" ", _MARKUP.sub("", line.lower())).strip()


def line_key(normal: str) -> str:
    return hashlib.blake2b(normal.encode("utf-8", "replace"), digest_size=8).hexdigest()


def body_lines(cleaned_body: str) -> dict[str, list[str]]:
    """Digest -> the words (``text.tokens``) of each short line of an already cleaned body."""
    out: dict[str, list[str]] = {}
    for raw in cleaned_body.splitlines():
        if len(out) >= MAX_LINES:
            break
        normal = normal_line(raw)
        if not normal or len(normal) > MAX_LINE_CHARS:
            continue
        words = tokens(raw)
        if words:
            out.setdefault(line_key(normal), words)
    return out


def is_template(key: str, stats: LineStats) -> bool:
    return stats.line_df(key) >= max(TEMPLATE_MIN_PRS, TEMPLATE_SHARE * stats.size)


def template_keys(lines: dict[str, list[str]], stats: LineStats) -> list[str]:
    """The PR's lines that the repository's template has."""
    return [key for key in lines if is_template(key, stats)]


def without_template(
    terms: Counter[str], lines: dict[str, list[str]], stats: LineStats
) -> Counter[str]:
    """``terms`` less the words of the PR's template lines; ``terms`` itself when it has none."""
    keys = template_keys(lines, stats)
    if not keys:
        return terms
    out = Counter(terms)
    for key in keys:
        for word in lines[key]:
            out[word] -= 1
    return +out  # drops words at zero: the template's only
