"""Evidence lines: short text with code spans and issue references kept apart, so the comment
can escape the text, fence the code and link the references, while the JSON report gets one
plain string with backticks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Evidence:
    # Each part is ("text", s), ("code", s) or ("ref", digits): an issue or PR number that the
    # comment links (the digits are the bot's own, so the link is safe to keep).
    parts: tuple[tuple[str, str], ...]

    @classmethod
    def text(cls, *parts: Any) -> Evidence:
        """Plain strings are text; ``("code", s)`` tuples become code spans, ``("ref", n)``
        issue links."""
        out = []
        for part in parts:
            if isinstance(part, tuple):
                out.append((part[0], str(part[1])))
            else:
                out.append(("text", str(part)))
        return cls(tuple(out))

    def __str__(self) -> str:
        return "".join(_PLAIN[kind].format(s) for kind, s in self.parts)


_PLAIN = {"text": "{}", "code": "`{}`", "ref": "#{}"}


_EVIDENCE_ORDER = (
    "both fix",
    "this PR mentions",
    "#",
    "both add",
    "both change",
    "both create",
    "overlapping edits",
    "",  # "shares `path`", "N of M changed files shared"
    "both mention",
    "both name ticket",
    "similar title",
    "similar added code",
    "opened",
)


def evidence_rank(item: Evidence) -> int:
    """Strongest first: claims and links, new names, edits, files, then wording and time."""
    text = str(item)
    for rank, prefix in enumerate(_EVIDENCE_ORDER):
        if prefix and text.startswith(prefix):
            return rank
    return _EVIDENCE_ORDER.index("")
