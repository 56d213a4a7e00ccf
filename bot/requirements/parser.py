"""Requirement files as pip reads them, turned into typed lines with file:line.

pip's format is line based: ``\\`` continues a line, ``#`` after whitespace starts a comment,
options (``-r``, ``-c``, ``-e``, ``--index-url``…) sit on their own lines or after a
requirement (``--hash``). PEP 508 requirements and markers are parsed by ``packaging``; only
the file format around them is handled here. Nothing raises on bad input: every problem
becomes a :class:`Problem` naming file and line.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

# pip's COMMENT_RE: "#" at the start of a line or after whitespace.
_COMMENT = re.compile(r"(^|\s+)#.*$")
_URL_LIKE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git\+|hg\+|svn\+|bzr\+|file:)", re.I)
URL_LIKE = _URL_LIKE
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9_.\-\[\]]+)")

IncludeKind = Literal["requirement", "constraint"]

# Options that take a value, by every spelling pip accepts, mapped to one canonical name.
_VALUE_OPTIONS = {
    "-r": "requirement",
    "--requirement": "requirement",
    "-c": "constraint",
    "--constraint": "constraint",
    "-e": "editable",
    "--editable": "editable",
    "-i": "index-url",
    "--index-url": "index-url",
    "--extra-index-url": "extra-index-url",
    "-f": "find-links",
    "--find-links": "find-links",
    "--trusted-host": "trusted-host",
    "--use-feature": "use-feature",
    "--no-binary": "no-binary",
    "--only-binary": "only-binary",
    "--hash": "hash",
    "--config-settings": "config-settings",
    "--global-option": "global-option",
}
_FLAG_OPTIONS = {
    "--no-index": "no-index",
    "--pre": "pre",
    "--prefer-binary": "prefer-binary",
    "--require-hashes": "require-hashes",
}
# Options allowed after a requirement on the same line.
_PER_REQUIREMENT = {"hash", "config-settings", "global-option"}
# Options that change where packages come from; uv honours them inside requirement files.
INDEX_OPTIONS = {"index-url", "extra-index-url", "find-links", "no-index", "trusted-host"}


@dataclass(frozen=True)
class Problem:
    """Something wrong in a requirement file. ``line`` 0 means the file as a whole."""

    file: str
    line: int
    message: str

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class RequirementLine:
    """One requirement: a PEP 508 string, an editable, or a direct URL/path."""

    file: str
    line: int
    text: str
    name: str  # canonical (PEP 503) name
    requirement: Requirement | None = None
    editable: bool = False
    url: str | None = None
    hashes: tuple[str, ...] = ()

    @property
    def is_local(self) -> bool:
        """A path on disk (``-e .``, ``./pkg``): building it means running the repo's code."""
        target = self.url or ""
        return bool(target) and (
            target.startswith((".", "/", "file:")) or not _URL_LIKE.match(target)
        )


@dataclass(frozen=True)
class IncludeLine:
    """``-r``/``-c`` to another file; ``target`` is a repository path, already normalised."""

    file: str
    line: int
    kind: IncludeKind
    target: str


@dataclass(frozen=True)
class OptionLine:
    """A global option line such as ``--extra-index-url URL`` or ``--pre``."""

    file: str
    line: int
    option: str
    value: str | None
    text: str


@dataclass
class ParsedFile:
    path: str
    requirements: list[RequirementLine] = field(default_factory=list)
    includes: list[IncludeLine] = field(default_factory=list)
    options: list[OptionLine] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, line) after joining ``\\`` continuations and dropping comments.

    Follows pip: a comment line ends a continuation, and ``#`` only starts a comment at the
    start of a line or after whitespace (so ``#egg=`` and ``#sha256=`` in URLs survive).
    """
    joined: list[tuple[int, str]] = []
    pending: list[str] = []
    first = 0
    for number, raw in enumerate(text.splitlines(), 1):
        is_comment = _COMMENT.match(raw) is not None
        if not raw.endswith("\\") or is_comment:
            if pending:
                pending.append(" " + raw if is_comment else raw)
                joined.append((first, "".join(pending)))
                pending = []
            else:
                joined.append((number, raw))
        else:
            if not pending:
                first = number
            pending.append(raw.rstrip("\\"))
    if pending:
        joined.append((first, "".join(pending)))
    out = []
    for number, line in joined:
        stripped = _COMMENT.sub("", line).strip()
        if stripped:
            out.append((number, stripped))
    return out


def _split_args_options(line: str) -> tuple[str, str]:
    """pip's break_args_options: everything before the first token starting with '-'."""
    tokens = line.split(" ")
    for index, token in enumerate(tokens):
        if token.startswith("-"):
            return " ".join(tokens[:index]), " ".join(tokens[index:])
    return line, ""


def _parse_options(text: str) -> tuple[list[tuple[str, str | None]], str | None]:
    """Option tokens as (canonical name, value); the second item is an error message."""
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        return [], f"cannot split options: {exc}"
    parsed: list[tuple[str, str | None]] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        spelled, value = token, None
        if token.startswith("--") and "=" in token:
            spelled, value = token.split("=", 1)
        elif token.startswith("-") and not token.startswith("--") and len(token) > 2:
            spelled, value = token[:2], token[2:]  # -rfile, -ehttps://...
        if spelled in _FLAG_OPTIONS and value is None:
            parsed.append((_FLAG_OPTIONS[spelled], None))
            continue
        if spelled not in _VALUE_OPTIONS:
            return parsed, f"unknown option {spelled!r}"
        if value is None:
            if index >= len(tokens):
                return parsed, f"option {spelled!r} needs a value"
            value = tokens[index]
            index += 1
        parsed.append((_VALUE_OPTIONS[spelled], value))
    return parsed, None


def name_from_url(url: str) -> str | None:
    """The project name a URL or path names: ``#egg=``, or a wheel/sdist file name."""
    egg = _EGG.search(url)
    if egg:
        return canonicalize_name(egg.group(1).split("[")[0])
    filename = url.split("#")[0].split("?")[0].rstrip("/").rsplit("/", 1)[-1]
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[0])
        return str(parse_sdist_filename(filename)[0])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def _invalid_requirement_message(spec: str, exc: Exception) -> str:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if ";" in spec:
        try:
            Requirement(spec.split(";", 1)[0])
        except InvalidRequirement:
            pass
        else:
            return f"invalid marker: {first}"
    return f"invalid requirement {spec!r}: {first}"


def parse_requirement_text(
    path: str, number: int, spec: str, *, editable: bool = False, hashes: tuple[str, ...] = ()
) -> RequirementLine | Problem:
    """One requirement string (PEP 508, URL or path) as a typed line, or why it is not one."""
    if editable or _URL_LIKE.match(spec) or spec.startswith((".", "/")):
        try:  # "name @ url" forms are PEP 508 even when editable
            parsed = Requirement(spec)
            return RequirementLine(
                path,
                number,
                spec,
                canonicalize_name(parsed.name),
                parsed,
                editable,
                parsed.url,
                hashes,
            )
        except InvalidRequirement:
            pass
        name = name_from_url(spec)
        if name is None and spec.startswith((".", "/")):
            name = canonicalize_name(posixpath.basename(spec.rstrip("/")) or spec)
        return RequirementLine(path, number, spec, name or spec, None, editable, spec, hashes)
    try:
        parsed = Requirement(spec)
    except InvalidRequirement as exc:
        return Problem(path, number, _invalid_requirement_message(spec, exc))
    return RequirementLine(
        path, number, spec, canonicalize_name(parsed.name), parsed, False, parsed.url, hashes
    )


def include_target(including: str, value: str) -> str | None:
    """The repository path ``value`` names, relative to the including file; None if outside."""
    if _URL_LIKE.match(value) or value.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(including), value))
    if joined.startswith("../") or joined == "..":
        return None
    return joined


def parse_requirement_file(path: str, text: str) -> ParsedFile:
    """Every line of one requirement file; bad lines become problems, the rest still parse."""
    result = ParsedFile(path)
    for number, line in logical_lines(text):
        args, option_text = _split_args_options(line)
        options, error = _parse_options(option_text) if option_text else ([], None)
        if error:
            result.problems.append(Problem(path, number, error))
            continue
        if args:
            bad = [name for name, _ in options if name not in _PER_REQUIREMENT]
            if bad:
                result.problems.append(
                    Problem(path, number, f"option --{bad[0]} cannot follow a requirement")
                )
                continue
            hashes = tuple(value or "" for name, value in options if name == "hash")
            parsed = parse_requirement_text(path, number, args, hashes=hashes)
            _add(result, parsed)
            continue
        _parse_option_line(result, path, number, line, options)
    return result


def _parse_option_line(
    result: ParsedFile, path: str, number: int, line: str, options: list[tuple[str, str | None]]
) -> None:
    for name, value in options:
        if name in ("requirement", "constraint"):
            target = include_target(path, value or "")
            if target is None:
                result.problems.append(
                    Problem(path, number, f"-{name[0]} {value}: outside the repository")
                )
            else:
                kind: IncludeKind = "requirement" if name == "requirement" else "constraint"
                result.includes.append(IncludeLine(path, number, kind, target))
        elif name == "editable":
            _add(result, parse_requirement_text(path, number, value or "", editable=True))
        elif name in _PER_REQUIREMENT:
            result.problems.append(Problem(path, number, f"--{name} without a requirement"))
        else:
            result.options.append(OptionLine(path, number, name, value, line))


def _add(result: ParsedFile, parsed: RequirementLine | Problem) -> None:
    if isinstance(parsed, Problem):
        result.problems.append(parsed)
    else:
        result.requirements.append(parsed)


def parse_pyproject_build_requires(path: str, text: str) -> ParsedFile:
    """``[build-system].requires`` of a pyproject.toml, each with the line it sits on."""
    result = ParsedFile(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = int(m.group(1)) if (m := re.search(r"line (\d+)", str(exc))) else 0
        result.problems.append(Problem(path, line, f"invalid TOML: {exc}"))
        return result
    requires = data.get("build-system", {}).get("requires", [])
    if not isinstance(requires, list):
        result.problems.append(Problem(path, 0, "[build-system].requires is not a list"))
        return result
    lines = text.splitlines()
    start = next((i for i, t in enumerate(lines) if t.strip() == "[build-system]"), 0)
    for spec in requires:
        if not isinstance(spec, str):
            result.problems.append(Problem(path, start + 1, f"non-string requirement {spec!r}"))
            continue
        number = next(
            (i + 1 for i in range(start, len(lines)) if spec in lines[i]),
            start + 1,
        )
        _add(result, parse_requirement_text(path, number, spec.strip()))
    return result
