"""The three outputs of ``git diff`` that a snapshot reads, each parsed on its own: ``--raw -z``
(status and paths, renames included), ``--numstat -z`` (line counts, binary files) and the
patch (one chunk per file). Pure functions over git's bytes; running git is bot/local/git.py's.

With ``-z`` every path is a field of its own, so names with tabs, newlines or quotes need no
unquoting. A rename or copy names two paths: the old one first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class RawEntry:
    letter: str  # A M D R C T (U, X: unmerged, unknown)
    path: str
    previous_path: str | None = None  # renames and copies


@dataclass(frozen=True)
class LineCounts:
    added: int = 0
    deleted: int = 0
    binary: bool = False


def _fields(text: str) -> Iterator[str]:
    return iter(text.split("\0"))


def raw_entries(raw: str) -> list[RawEntry]:
    """``git diff --raw -z``: ``:mode mode sha sha STATUS\\0path\\0[path\\0]`` per file."""
    fields = _fields(raw)
    entries = []
    for meta in fields:
        if not meta.startswith(":"):
            continue  # the empty field after the last NUL
        letter = meta.split()[-1][:1]
        first = next(fields, "")
        if not first:
            break  # cut short: the entry has no path
        if letter in ("R", "C"):
            second = next(fields, "")
            if not second:
                break
            entries.append(RawEntry(letter, second, first))
        else:
            entries.append(RawEntry(letter, first))
    return entries


def numstat_counts(numstat: str) -> dict[str, LineCounts]:
    """``git diff --numstat -z``: ``added\\tdeleted\\tpath\\0`` per file, or for a rename
    ``added\\tdeleted\\t\\0old\\0new\\0``; ``-`` for both counts marks a binary file. Keyed by
    the path at head."""
    fields = _fields(numstat)
    counts = {}
    for item in fields:
        if not item:
            continue
        parts = item.split("\t", 2)
        if len(parts) < 3:
            continue
        added, deleted, path = parts
        if not path:  # a rename: the two paths follow as fields of their own
            next(fields, None)
            path = next(fields, "")
            if not path:
                break
        if added == "-" or deleted == "-":
            counts[path] = LineCounts(binary=True)
        elif added.isdigit() and deleted.isdigit():
            counts[path] = LineCounts(int(added), int(deleted))
    return counts


_FILE_START = re.compile(rb"(?m)^(?=diff --git )")


def file_patches(patch: bytes) -> list[bytes]:
    """The patch split into one chunk per file, each from its ``diff --git`` line."""
    return [chunk for chunk in _FILE_START.split(patch) if chunk.startswith(b"diff --git ")]


def hunks_of(chunk: bytes) -> bytes | None:
    """A file's chunk from its first ``@@`` on (GitHub's ``patch`` field), or None when the
    chunk has no hunk (a binary file, a mode change, an empty file added)."""
    start = chunk.find(b"\n@@")
    return None if start == -1 else chunk[start + 1 :]
