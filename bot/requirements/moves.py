"""Entry files that moved: ``requirements/docs.txt`` at base is ``requirements/docs.in`` now.

The rules name one entry per target, and the rules are read at base. When a PR moves the
file the rules now name, the base has no such file, and every package would read as added
(vLLM 0.21 turned ``docs.txt`` into ``docs.in`` + a compiled ``docs.txt``: "14 added
packages"). The base side of a moved entry is the file it was moved from: a rename git saw,
or else the changed file of the PR whose packages at base are most like the entry's at head.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.snapshot import ChangedFile
from bot.requirements.compiled import parse_compiled_header
from bot.requirements.graph import RequirementTree

_REQUIREMENT_SUFFIXES = (".txt", ".in")
# Share of package names two files must have in common to be one file moved (Jaccard).
MIN_MOVE_SIMILARITY = 0.5
# Changed files compared with a moved entry; a PR controls how many there are.
MAX_MOVE_CANDIDATES = 200


def _names(tree: RequirementTree, path: str) -> set[str]:
    parsed = tree.file(path)
    if parsed is None:
        return set()
    return {line.name for line in parsed.requirements} | {i.target for i in parsed.includes}


def moved_from(
    entry: str,
    changed: Iterable[ChangedFile],
    base_tree: RequirementTree,
    head_tree: RequirementTree,
) -> str | None:
    """The base path ``entry`` was moved from, or None when it exists at base or is new."""
    if base_tree.file(entry) is not None or head_tree.file(entry) is None:
        return None
    changed = list(changed)
    for item in changed:
        if item.path == entry and item.previous_path and base_tree.file(item.previous_path):
            return item.previous_path
    wanted = _names(head_tree, entry)
    if not wanted:
        return None
    best, best_score = None, 0.0
    candidates = [item.previous_path or item.path for item in changed]
    candidates = [p for p in candidates if p != entry and p.endswith(_REQUIREMENT_SUFFIXES)]
    for path in candidates[:MAX_MOVE_CANDIDATES]:
        found = _names(base_tree, path)
        if not found:
            continue
        score = len(wanted & found) / len(wanted | found)
        if score > best_score:
            best, best_score = path, score
    return best if best_score >= MIN_MOVE_SIMILARITY else None


def base_paths(
    paths: Iterable[str],
    changed: Iterable[ChangedFile],
    base_tree: RequirementTree,
    head_tree: RequirementTree,
) -> tuple[list[str], dict[str, str]]:
    """(the paths to read at base, {head path: base path} for those that moved)."""
    changed = list(changed)
    out, moves = [], {}
    for path in paths:
        source = moved_from(path, changed, base_tree, head_tree)
        if source is not None:
            moves[path] = source
        out.append(source or path)
    return out, moves


def left_behind(source: str, entry: str, head_tree: RequirementTree) -> str | None:
    """What a moved entry's old path is at head, when the PR kept it: vLLM 0.21.0's
    ``docs.txt`` stayed as the lock compiled from ``docs.in``, which is what its docs build
    installs, so "moved" alone would hide that the install went from names to exact pins.
    None when the old path is gone (a plain move)."""
    parsed = head_tree.file(source)
    if parsed is None:
        return None
    pins = sum(
        1
        for line in parsed.requirements
        if line.requirement is not None
        and len(line.requirement.specifier) == 1
        and next(iter(line.requirement.specifier)).operator in ("==", "===")
    )
    count = len(parsed.requirements)
    text = head_tree.reader.read_text(source) or ""
    compiled = parse_compiled_header(source, text)
    pinned = f"{pins} of its {count} requirement{'s' if count != 1 else ''} exact pins"
    if compiled is not None and entry in compiled.inputs:
        return f"stays, compiled from it ({pinned})"
    return f"stays ({pinned})"
