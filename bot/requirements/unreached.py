"""Changed requirement files that no declared platform or set reaches.

vLLM's ``requirements/kv_connectors.txt`` is installed by the Dockerfile and CI steps, not
by any platform's entry file, so a change to it (nixl ``<=0.10.1`` → ``>=1.1.0``) reached no
cell and appeared nowhere. Such a file is still listed, with its own package changes and
what does reach it: the compiled file's inputs, requirement files that include it, files of
the rules' ``mentions`` globs that name it, or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bot.limits import MAX_REQUIREMENTS_BYTES
from bot.requirements.compiled import parse_compiled_header
from bot.requirements.effective import SetDiff, diff_sets, effective_set
from bot.requirements.graph import RequirementTree
from bot.snapshot import path_matches

# Bounds on the search for what names a file: files read, and the size of each.
MAX_MENTION_FILES = 500
MAX_SHOWN = 3


@dataclass
class Unreached:
    path: str
    reached_by: list[str] = field(default_factory=list)  # empty: nothing reaches it
    diff: SetDiff = field(default_factory=SetDiff)
    compiled: bool = False


def _reached_by(
    path: str,
    head_tree: RequirementTree,
    requirement_paths: list[str],
    mention_paths: list[str],
) -> tuple[list[str], bool]:
    text = head_tree.reader.read_text(path) or ""
    compiled = parse_compiled_header(path, text[:4000])
    out: list[str] = []
    if compiled is not None and compiled.problem is None:
        out.append("compiled from " + ", ".join(compiled.inputs + compiled.constraints))
    includers, outputs = [], []
    for other in requirement_paths[:MAX_MENTION_FILES]:
        parsed = head_tree.file(other) if other != path else None
        if parsed is not None and any(i.target == path for i in parsed.includes):
            includers.append(other)
        header = parse_compiled_header(other, (head_tree.reader.read_text(other) or "")[:4000])
        if header is not None and path in header.inputs + header.constraints:
            outputs.append(other)
    if includers:
        out.append(_listed("included by", includers))
    if outputs:
        out.append(_listed("compiled into", outputs))
    mentioned = []
    for other in mention_paths[:MAX_MENTION_FILES]:
        data = head_tree.reader.read_text(other)
        if data is not None and len(data) <= MAX_REQUIREMENTS_BYTES and path in data:
            mentioned.append(other)
    if mentioned:
        out.append(_listed("named in", mentioned))
    return out, compiled is not None


def _listed(prefix: str, paths: list[str]) -> str:
    more = f" +{len(paths) - MAX_SHOWN}" if len(paths) > MAX_SHOWN else ""
    return f"{prefix} {', '.join(paths[:MAX_SHOWN])}{more}"


def unreached_files(
    changed: Iterable[str],
    reached: set[str],
    base_tree: RequirementTree,
    head_tree: RequirementTree,
    head_paths: list[str],
    file_globs: list[str],
    mention_globs: list[str],
    env: dict[str, str],
) -> list[Unreached]:
    """Every changed file of ``file_globs`` outside ``reached``, with what reaches it."""
    candidates = sorted(
        p for p in changed if p not in reached and any(path_matches(p, g) for g in file_globs)
    )
    if not candidates:
        return []
    requirement_paths = [p for p in head_paths if any(path_matches(p, g) for g in file_globs)]
    mention_paths = [p for p in head_paths if any(path_matches(p, g) for g in mention_globs)]
    found = []
    for path in candidates:
        base = base_tree.closure([path]) if base_tree.file(path) else None
        head = head_tree.closure([path]) if head_tree.file(path) else None
        before = effective_set(base, env) if base else {}
        after = effective_set(head, env) if head else {}
        reached_by, compiled = _reached_by(path, head_tree, requirement_paths, mention_paths)
        found.append(Unreached(path, reached_by, diff_sets(before, after), compiled))
    return found
