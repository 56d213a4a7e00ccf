"""Two long values cut to fit a comment so that the cut keeps what differs between them.

Cutting both at the same length hides a difference past the cut: "a, b, c, …" on both sides of
a Before/After pair. Here each side is a window of the same place in both texts, starting a
little before their first difference, with an ellipsis wherever text was left out.
"""

from __future__ import annotations

ELLIPSIS = "…"
# Characters of common text kept before the first difference, so a reader sees where it is.
LEAD = 40


def _common_prefix(first: str, second: str) -> int:
    size = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        size += 1
    return size


def _window(text: str, start: int, width: int, spans: bool) -> str:
    """``text[start:start + width]`` with an ellipsis for each cut end; with ``spans`` (text
    whose backticks quote code), a code span the cut opened or left open is closed again,
    so no backtick shows as text."""
    end = min(len(text), start + width)
    part = text[start:end]
    if spans and text.count("`", 0, start) % 2:  # the window starts inside a code span
        part = "`" + part
    if spans and part.count("`") % 2:  # and the cut at the end leaves one open
        part += "`"
    return (ELLIPSIS if start > 0 else "") + part + (ELLIPSIS if end < len(text) else "")


def differing(first: str, second: str, width: int = 160, spans: bool = True) -> tuple[str, str]:
    """``first`` and ``second`` cut to about ``width`` characters each, at the same place:
    from ``LEAD`` characters before their first difference (from the start when that is
    within the first ``width``). Values that fit, or that are equal, are cut from the start.
    ``spans=False`` for text shown verbatim as code (a generated file's lines)."""
    first, second = str(first), str(second)
    if len(first) <= width and len(second) <= width:
        return first, second
    shared = _common_prefix(first, second)
    start = 0 if first == second or shared < width - LEAD else shared - LEAD
    # Never start inside a word when a separator is near: "…fp8_e4m3" reads better than "…e4m3".
    for separator in (", ", " · ", " "):
        found = first.rfind(separator, max(start - 20, 0), start + 1)
        if start and found > 0:
            start = found + len(separator)
            break
    return _window(first, start, width, spans), _window(second, start, width, spans)
