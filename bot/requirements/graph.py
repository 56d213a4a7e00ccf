"""The include graph of one revision: which files an entry file reaches, and the reverse.

``-r`` pulls in requirements, ``-c`` constraints; like uv, everything reached through a
constraint file counts as a constraint. Missing files, include cycles, files over the size
bound and chains deeper than :data:`MAX_INCLUDE_DEPTH` are problems at the include line; the
rest of the graph is still walked. The walk is iterative: a PR controls the depth.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from bot.core.limits import MAX_REQUIREMENTS_BYTES, InputRejected, check_size
from bot.requirements.parser import (
    IncludeLine,
    OptionLine,
    ParsedFile,
    Problem,
    RequirementLine,
    parse_pyproject_build_requires,
    parse_requirement_file,
)

# pip has no depth limit, but no real tree nests -r more than a few levels (vLLM: 3).
MAX_INCLUDE_DEPTH = 50
# Every file of one closure, however they include each other.
MAX_CLOSURE_FILES = 2_000


class TextReader(Protocol):
    def read_text(self, path: str) -> str | None: ...


def parse_any(path: str, text: str) -> ParsedFile:
    """A requirement file, or the build requirements when ``path`` is a pyproject.toml."""
    if path.endswith("pyproject.toml"):
        return parse_pyproject_build_requires(path, text)
    return parse_requirement_file(path, text)


class RequirementTree:
    """Requirement files of one revision, read and parsed once each, on demand."""

    def __init__(self, reader: TextReader) -> None:
        self.reader = reader
        self._files: dict[str, ParsedFile | None] = {}

    def file(self, path: str) -> ParsedFile | None:
        """The parsed file, None when it does not exist; an oversized one parses as a problem."""
        if path not in self._files:
            text = self.reader.read_text(path)
            if text is None:
                self._files[path] = None
            else:
                try:
                    check_size(path, text, MAX_REQUIREMENTS_BYTES, "requirement files")
                except InputRejected as rejected:
                    self._files[path] = ParsedFile(path, problems=[Problem(path, 0, str(rejected))])
                else:
                    self._files[path] = parse_any(path, text)
        return self._files[path]

    def closure(self, entries: Iterable[str], constraints: Iterable[str] = ()) -> Closure:
        """Everything ``entries`` reach (as requirements) and ``constraints`` reach (as -c)."""
        walk = _Walk(self)
        for entry in entries:
            walk.start(entry, "requirement")
        for entry in constraints:
            walk.start(entry, "constraint")
        return walk.closure


@dataclass
class Closure:
    """What one target reaches: requirement and constraint lines, options, files, problems."""

    requirements: list[RequirementLine] = field(default_factory=list)
    constraints: list[RequirementLine] = field(default_factory=list)
    options: list[OptionLine] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


class _Walk:
    def __init__(self, tree: RequirementTree) -> None:
        self.tree = tree
        self.closure = Closure()
        self.seen: set[tuple[str, str]] = set()
        self.problem_keys: set[tuple[str, int, str]] = set()

    def problem(self, problem: Problem) -> None:
        key = (problem.file, problem.line, problem.message)
        if key not in self.problem_keys:
            self.problem_keys.add(key)
            self.closure.problems.append(problem)

    def start(self, entry: str, mode: str) -> None:
        if self.tree.file(entry) is None:
            self.problem(Problem(entry, 0, "entry file not found"))
            return
        self.walk(entry, mode)

    def walk(self, entry: str, mode: str) -> None:
        """Depth first, in file order, with an explicit stack of (path, mode, include chain)."""
        pending: list[tuple[str, str, tuple[str, ...]]] = [(entry, mode, (entry,))]
        while pending:
            path, mode, chain = pending.pop()
            if (path, mode) in self.seen:
                continue
            parsed = self.tree.file(path)
            if parsed is None:
                continue
            if len(self.closure.files) >= MAX_CLOSURE_FILES and path not in self.closure.files:
                self.problem(
                    Problem(chain[0], 0, f"reaches over {MAX_CLOSURE_FILES:,} files; not read")
                )
                return
            self.seen.add((path, mode))
            if path not in self.closure.files:
                self.closure.files.append(path)
            for problem in parsed.problems:
                self.problem(problem)
            target = (
                self.closure.requirements if mode == "requirement" else self.closure.constraints
            )
            target.extend(parsed.requirements)
            self.closure.options.extend(parsed.options)
            children = []
            for include in parsed.includes:
                child = self._child(path, include, chain)
                if child is not None:
                    child_mode = "constraint" if include.kind == "constraint" else mode
                    children.append((include.target, child_mode, (*chain, include.target)))
            pending.extend(reversed(children))  # the first include is walked first, as pip does

    def _child(self, path: str, include: IncludeLine, chain: tuple[str, ...]) -> str | None:
        flag = "-r" if include.kind == "requirement" else "-c"
        if include.target in chain:
            cycle = " → ".join(chain[chain.index(include.target) :] + (include.target,))
            self.problem(Problem(path, include.line, f"circular include: {cycle}"))
            return None
        if len(chain) >= MAX_INCLUDE_DEPTH:
            self.problem(
                Problem(
                    path,
                    include.line,
                    f"{flag} {include.target}: includes nested over {MAX_INCLUDE_DEPTH} deep;"
                    " not followed",
                )
            )
            return None
        if self.tree.file(include.target) is None:
            self.problem(Problem(path, include.line, f"{flag} {include.target}: file not found"))
            return None
        return include.target


def reverse_index(closures: Mapping[str, Closure]) -> dict[str, set[str]]:
    """file -> the targets that reach it; a change to the file concerns exactly those."""
    reached_by: dict[str, set[str]] = {}
    for target, closure in closures.items():
        for path in closure.files:
            reached_by.setdefault(path, set()).add(target)
    return reached_by
