"""Ready patches for the report: unified diffs that ``git apply`` takes as they are."""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file\n"


def unified_patch(path: str, old: str, new: str) -> str:
    """The diff turning ``old`` into ``new`` for ``path`` (empty when they are equal).

    difflib leaves a last line without its newline glued to the next diff line; git
    wants the "No newline at end of file" marker there instead.
    """
    if old == new:
        return ""
    out = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
    ):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + NO_NEWLINE)
    return "".join(out)
