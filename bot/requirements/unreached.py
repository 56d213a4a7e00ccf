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

from bot.core.globs import path_matches
from bot.core.limits import MAX_REQUIREMENTS_BYTES
from bot.requirements.compiled import parse_compiled_header
from bot.requirements.effective import SetDiff, diff_sets, effective_set
from bot.requirements.graph import RequirementTree

# Bounds: a PR controls how many files change and how large the searched files are.
MAX_UNREACHED = 50  # files listed; the rest are counted
MAX_MENTION_FILES = 500  # files searched for a path, and their bytes in all
MAX_MENTION_BYTES = 20_000_000
MAX_SHOWN = 3


@dataclass
class Unreached:
    path: str
    reached_by: list[str] = field(default_factory=list)  # empty: nothing reaches it
    diff: SetDiff = field(default_factory=SetDiff)
    compiled: bool = False


def _mention_texts(head_tree: RequirementTree, paths: list[str]) -> dict[str, str]:
    """The searched files' text, read once, within the byte budget."""
    texts: dict[str, str] = {}
    budget = MAX_MENTION_BYTES
    for path in paths[:MAX_MENTION_FILES]:
        text = head_tree.reader.read_text(path)
        if text is None or len(text) > MAX_REQUIREMENTS_BYTES or len(text) > budget:
            continue
        budget -= len(text)
        texts[path] = text
    return texts


@dataclass
class _RequirementFiles:
    """The head's requirement files, each read once: what it includes, what it compiles."""

    includes: dict[str, set[str]] = field(default_factory=dict)
    compiled_from: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, head_tree: RequirementTree, paths: list[str]) -> _RequirementFiles:
        found = cls()
        for path in paths[:MAX_MENTION_FILES]:
            parsed = head_tree.file(path)
            if parsed is None:
                continue
            found.includes[path] = {include.target for include in parsed.includes}
            text = head_tree.reader.read_text(path) or ""
            header = parse_compiled_header(path, text[:4000])
            if header is not None and header.problem is None:
                found.compiled_from[path] = header.inputs + header.constraints
        return found


def _reached_by(
    path: str, files: _RequirementFiles, mentions: dict[str, str]
) -> tuple[list[str], bool]:
    out: list[str] = []
    if path in files.compiled_from:
        out.append("compiled from " + ", ".join(files.compiled_from[path]))
    includers = [other for other, targets in files.includes.items() if path in targets]
    outputs = [other for other, inputs in files.compiled_from.items() if path in inputs]
    if includers:
        out.append(_listed("included by", includers))
    if outputs:
        out.append(_listed("compiled into", outputs))
    mentioned = [other for other, data in mentions.items() if path in data]
    if mentioned:
        out.append(_listed("named in", mentioned))
    return out, path in files.compiled_from


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
) -> tuple[list[Unreached], int]:
    """Every changed file of ``file_globs`` outside ``reached``, with what reaches it.

    At most :data:`MAX_UNREACHED` are listed; the second item is how many more there were.
    """
    candidates = sorted(
        p for p in changed if p not in reached and any(path_matches(p, g) for g in file_globs)
    )
    if not candidates:
        return [], 0
    requirement_paths = [p for p in head_paths if any(path_matches(p, g) for g in file_globs)]
    mention_paths = [p for p in head_paths if any(path_matches(p, g) for g in mention_globs)]
    mentions = _mention_texts(head_tree, mention_paths)
    files = _RequirementFiles.read(head_tree, requirement_paths)
    found = []
    for path in candidates[:MAX_UNREACHED]:
        base = base_tree.closure([path]) if base_tree.file(path) else None
        head = head_tree.closure([path]) if head_tree.file(path) else None
        before = effective_set(base, env) if base else {}
        after = effective_set(head, env) if head else {}
        reached_by, compiled = _reached_by(path, files, mentions)
        found.append(Unreached(path, reached_by, diff_sets(before, after), compiled))
    return found, len(candidates) - len(found)
