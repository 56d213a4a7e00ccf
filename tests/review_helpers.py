"""Shared by the review tests: run the patterns on a source text, every line (or some) added."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from functools import cache

from bot.report import rules
from bot.review.config import ReviewRules
from bot.review.engine import review_file
from bot.review.source import Flag


@cache
def vllm_review_rules() -> ReviewRules:
    # Read once: the model is never mutated by the patterns.
    return rules.load_builtin("vllm").checks.review


def flags(
    source: str,
    *,
    added: Iterable[int] | None = None,
    declared: Iterable[str] = (),
    path: str = "vllm/v1/attention/backends/example.py",
    review_rules: ReviewRules | None = None,
) -> list[Flag]:
    """The flags on ``source`` (dedented); every line counts as added unless ``added`` says."""
    text = textwrap.dedent(source)
    lines = range(1, text.count("\n") + 2) if added is None else added
    return review_file(path, text, lines, review_rules or vllm_review_rules(), set(declared))


def patterns(found: list[Flag]) -> list[str]:
    return [f.pattern for f in found]


def line_of(source: str, needle: str) -> int:
    """The 1-based line of the first line of (dedented) ``source`` containing ``needle``."""
    for number, line in enumerate(textwrap.dedent(source).splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in source")
