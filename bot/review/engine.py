"""Runs every enabled review pattern over the Python files a PR adds or changes.

Pure over its inputs: a file's path, its head text and the head line numbers the PR added.
A file that cannot be reviewed (does not parse, too large, too deep, too many nodes) is a
finding of its own (pattern ``not-reviewed``), never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field

from bot.core.limits import InputRejected
from bot.review import capability, dimensions, lazy_cache, optional_import, unbounded_cache
from bot.review.config import ReviewRules
from bot.review.source import Flag, ReviewedFile

NOT_REVIEWED = "not-reviewed"
# The patterns in the order a reviewer would raise them (also the findings' order).
PATTERNS = (
    lazy_cache.PATTERN,
    capability.PATTERN,
    dimensions.PATTERN,
    unbounded_cache.PATTERN,
    optional_import.PATTERN,
)
_REJECTED_LINE = re.compile(r"\(line (\d+)\)")


class LazyDeclared(Container[str]):
    """Declared distributions, read from the head's requirement files on first question."""

    def __init__(self, load: Callable[[], set[str]]) -> None:
        self._load = load
        self._names: set[str] | None = None

    def __contains__(self, name: object) -> bool:
        if self._names is None:
            self._names = self._load()
        return name in self._names


@dataclass
class ReviewResult:
    flags: list[Flag] = field(default_factory=list)
    not_reviewed: list[Flag] = field(default_factory=list)
    files: int = 0

    def findings(self) -> list[dict]:
        order = {pattern: index for index, pattern in enumerate(PATTERNS)}
        ranked = sorted(self.flags, key=lambda f: (order.get(f.pattern, 99), f.path, f.line))
        return [f.to_finding() for f in ranked + self.not_reviewed]


def not_reviewed(path: str, reason: str) -> Flag:
    match = _REJECTED_LINE.search(reason)
    return Flag(NOT_REVIEWED, path, int(match.group(1)) if match else 0, "", reason)


def review_file(
    path: str,
    source: str,
    added: Iterable[int],
    rules: ReviewRules,
    declared: Container[str] = frozenset(),
) -> list[Flag]:
    """The flags on ``added`` lines of one head file; raises ``InputRejected`` on bad input."""
    reviewed = ReviewedFile.parse(path, source, added, max_nodes=rules.max_nodes)
    flags: list[Flag] = []
    if rules.lazy_cache.enabled:
        flags += lazy_cache.find(reviewed, rules.lazy_cache)
    if rules.capability_contradiction.enabled:
        flags += capability.find(reviewed, rules.capability_contradiction)
    if rules.literal_dimensions.enabled:
        flags += dimensions.find(reviewed, rules.literal_dimensions)
    if rules.unbounded_cache.enabled:
        flags += unbounded_cache.find(reviewed, rules.unbounded_cache)
    if rules.silent_optional_import.enabled:
        flags += optional_import.find(reviewed, rules.silent_optional_import, declared)
    return flags


def review_files(
    files: Iterable[tuple[str, str | None, list[int] | None]],
    rules: ReviewRules,
    declared: Container[str] = frozenset(),
) -> ReviewResult:
    """``files`` are (path, head text or None, added line numbers or None when unknown).

    Past ``rules.max_files`` every further file is a ``not-reviewed`` finding of its own, so
    the count said is the true one; callers put the files the rules name as hot first.
    """
    result = ReviewResult()
    reviewed = 0
    for path, source, added in files:
        if reviewed >= rules.max_files:
            result.not_reviewed.append(not_reviewed(path, f"past the {rules.max_files}-file limit"))
            continue
        reviewed += 1
        if source is None:
            result.not_reviewed.append(not_reviewed(path, "could not be read at head"))
            continue
        if added is None:
            result.not_reviewed.append(
                not_reviewed(path, "has no diff to map to lines (too large or binary)")
            )
            continue
        if not added:
            continue
        result.files += 1
        try:
            result.flags += review_file(path, source, added, rules, declared)
        except InputRejected as exc:
            result.not_reviewed.append(not_reviewed(path, exc.reason))
    return result
