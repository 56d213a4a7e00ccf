"""The include graph of one revision: which files an entry file reaches, and the reverse.

``-r`` pulls in requirements, ``-c`` constraints; like uv, everything reached through a
constraint file counts as a constraint. Missing files and include cycles are problems at
the include line; the rest of the graph is still walked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from bot.requirements.parser import (
    OptionLine,
    ParsedFile,
    Problem,
    RequirementLine,
    parse_pyproject_build_requires,
    parse_requirement_file,
)


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
        if path not in self._files:
            text = self.reader.read_text(path)
            self._files[path] = None if text is None else parse_any(path, text)
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
        self.visit(entry, mode, [entry])

    def visit(self, path: str, mode: str, stack: list[str]) -> None:
        if (path, mode) in self.seen:
            return
        self.seen.add((path, mode))
        parsed = self.tree.file(path)
        if parsed is None:
            return
        if path not in self.closure.files:
            self.closure.files.append(path)
        for problem in parsed.problems:
            self.problem(problem)
        target = self.closure.requirements if mode == "requirement" else self.closure.constraints
        target.extend(parsed.requirements)
        self.closure.options.extend(parsed.options)
        for include in parsed.includes:
            flag = "-r" if include.kind == "requirement" else "-c"
            if include.target in stack:
                cycle = " → ".join(stack[stack.index(include.target) :] + [include.target])
                self.problem(Problem(path, include.line, f"circular include: {cycle}"))
                continue
            if self.tree.file(include.target) is None:
                self.problem(
                    Problem(path, include.line, f"{flag} {include.target}: file not found")
                )
                continue
            child_mode = "constraint" if include.kind == "constraint" else mode
            self.visit(include.target, child_mode, stack + [include.target])


def reverse_index(closures: Mapping[str, Closure]) -> dict[str, set[str]]:
    """file -> the targets that reach it; a change to the file concerns exactly those."""
    reached_by: dict[str, set[str]] = {}
    for target, closure in closures.items():
        for path in closure.files:
            reached_by.setdefault(path, set()).add(target)
    return reached_by
