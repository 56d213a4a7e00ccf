"""Path globs as the rules write them: ``**`` spans directories, a trailing ``/`` means
anything below. Every logic package matches paths through here."""

from __future__ import annotations

import functools
import re


def path_matches(path: str, pattern: str) -> bool:
    """Glob match where ``**`` spans directories and a trailing ``/`` means 'anything below'."""
    if pattern.endswith("/"):
        return path.startswith(pattern)
    return _glob_regex(pattern).fullmatch(path) is not None


@functools.lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    # Compiled once per pattern: checks match thousands of paths against the same globs.
    regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
    return re.compile(regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]"))
