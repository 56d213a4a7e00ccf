"""Glob matching of PR paths, in time linear in the path's length.

A glob is matched one path segment at a time: ``**`` stands for any number of whole
segments, every other segment is a small regex over one segment. A single regex over the
whole path (``(?:.*/)?[^/]*\\.py``) backtracks quadratically: one 1 MB path cost 187 s of
CPU per report. Paths longer than ``MAX_PATH_CHARS`` (Linux's ``PATH_MAX``: no checkout can
hold them) match no glob at all; the snapshot says so for each such file.
"""

from __future__ import annotations

import functools
import re

MAX_PATH_CHARS = 4096

# A pattern segment: a compiled regex for one path segment, or _ANY_SEGMENTS for "**".
_ANY_SEGMENTS = None


def _segment_regex(segment: str) -> re.Pattern[str]:
    return re.compile(re.escape(segment).replace(r"\*", "[^/]*").replace(r"\?", "[^/]"))


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> tuple[re.Pattern[str] | None, ...] | re.Pattern[str]:
    """The pattern's segments; or one regex for a "**" inside a segment ("docs/**.md")."""
    segments = pattern.split("/")
    if any("**" in s and s != "**" for s in segments):
        regex = re.escape(pattern).replace(r"\*\*", ".*")
        return re.compile(regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]"))
    if pattern == "**":
        return (_ANY_SEGMENTS,)
    parts: list[re.Pattern[str] | None] = []
    for index, segment in enumerate(segments):
        if segment != "**":
            parts.append(_segment_regex(segment))
        elif index == len(segments) - 1:
            # A trailing "x/**" is "x/" and then anything: at least one (maybe empty) segment.
            parts += [_segment_regex("*"), _ANY_SEGMENTS]
        elif not parts or parts[-1] is not _ANY_SEGMENTS:
            parts.append(_ANY_SEGMENTS)
    return tuple(parts)


def path_matches(path: str, pattern: str) -> bool:
    """Glob match where ``**`` spans directories and a trailing ``/`` means 'anything below'."""
    if len(path) > MAX_PATH_CHARS:
        return False
    if pattern.endswith("/"):
        return path.startswith(pattern)
    compiled = _compiled(pattern)
    if isinstance(compiled, re.Pattern):
        return compiled.fullmatch(path) is not None
    return _match_segments(path.split("/"), compiled)


def _match_segments(segments: list[str], parts: tuple[re.Pattern[str] | None, ...]) -> bool:
    # The set of pattern positions reachable after the segments read so far (an NFA walk):
    # at most len(parts) states per segment, so the work is linear in the path.
    end = len(parts)

    def closure(states: set[int]) -> set[int]:
        reached = set(states)
        for state in states:
            while state < end and parts[state] is _ANY_SEGMENTS:
                state += 1
                reached.add(state)
        return reached

    states = closure({0})
    for segment in segments:
        following: set[int] = set()
        for state in states:
            if state == end:
                continue
            part = parts[state]
            if part is _ANY_SEGMENTS:
                following.add(state)
            elif part.fullmatch(segment):
                following.add(state + 1)
        if not following:
            return False
        states = closure(following)
    return end in states
