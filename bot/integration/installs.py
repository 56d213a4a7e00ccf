"""Install commands in Dockerfiles and CI scripts, read as declarations of distributions.

vLLM installs some libraries outside its requirement files: ``uv pip install --system
nixl-cu13`` in ``docker/Dockerfile``, ``"kvcr @ git+https://github.com/ai-dynamo/kvcr.git"``
in ``.buildkite/scripts/install-kv-offload.sh``. An import of such a library is declared,
by the file that installs it. Only named installs count: a ``pip install`` (``pip3``,
``python -m pip``, ``uv pip``) argument that is a requirement (``name``, ``name==1.0``,
``name[extra]``, ``name @ url``), a URL with ``#egg=name`` or a wheel/sdist file name.
Requirement files (``-r``), local paths, globs (``/install/*.whl``) and arguments built from
shell variables (``nixl-cu${CUDA_MAJOR}``) name nothing prbot can know, so they count for
nothing. Nothing is run: the text is split with :mod:`shlex` after joining ``\\``
continuations; each file is bounded in size, and the number of files read is bounded too.
"""

from __future__ import annotations

import bisect
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from bot.core.limits import MAX_INSTALL_SCRIPTS, MAX_REQUIREMENTS_BYTES, InputRejected, check_size
from bot.requirements.parser import (
    URL_LIKE,
    RequirementLine,
    name_from_url,
    parse_requirement_text,
)

# pip options that take a value (the value is not a requirement), by every spelling.
_VALUE_OPTIONS = {
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
    "--extra-index-url", "-f", "--find-links", "--trusted-host", "-t", "--target",
    "--prefix", "--root", "--python", "-p", "--index-strategy", "--config-settings",
    "-C", "--global-option", "--no-binary", "--only-binary", "--upgrade-package", "-P",
    "--cache-dir", "--src", "--platform", "--python-version", "--implementation", "--abi",
    "--exclude-newer", "--torch-backend", "--extra", "--group", "--overrides",
    "--build-constraints", "-b", "--keyring-provider", "--link-mode", "--resolution",
    "--prerelease", "--reinstall-package", "--no-build-isolation-package", "--progress-bar",
    "--log", "--report", "--timeout", "--retries", "--proxy", "--cert", "--client-cert",
    "--exists-action", "--upgrade-strategy", "--root-user-action", "--python-platform",
}  # fmt: skip
# Named installs one file may hold (vLLM 0.33's largest Dockerfile has under 40); past it
# the file is a problem, not minutes of parsing.
MAX_INSTALLS_PER_FILE = 5_000
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "{", "}", "\n"}
_SHELL_WORDS = {"sudo", "exec", "time", "env", "then", "else", "do", "if", "!"}
# A Dockerfile instruction starting a line ("RUN --mount=... \"); its shell follows.
_DOCKER_INSTRUCTION = re.compile(r"^\s*(RUN|CMD|ENTRYPOINT)\s+", re.I)
_NAMED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-\[\], ]*(?:[<>=!~;@ ].*)?$")


@dataclass(frozen=True)
class Install:
    """One distribution a file installs, at the line its command starts."""

    name: str  # canonical distribution name
    path: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class _LogicalLine:
    """``\\``-continued physical lines joined, with where each one starts in the text."""

    text: str
    numbers: list[int]  # the physical line numbers joined
    starts: list[int]  # the offset in ``text`` where each of them starts

    def line_at(self, offset: int) -> int:
        return self.numbers[max(bisect.bisect_right(self.starts, offset) - 1, 0)]


def _logical_lines(text: str) -> Iterator[_LogicalLine]:
    """Each logical line; comment lines inside a continuation are dropped (Docker drops
    them; they end nothing)."""
    parts: list[str] = []
    numbers: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        if parts and line.strip().startswith("#"):
            continue
        continued = line.rstrip().endswith("\\")
        parts.append(line.rstrip()[:-1] if continued else line)
        numbers.append(number)
        if not continued:
            yield _joined(parts, numbers)
            parts, numbers = [], []
    if parts:
        yield _joined(parts, numbers)


def _joined(parts: list[str], numbers: list[int]) -> _LogicalLine:
    starts, offset = [], 0
    for part in parts:
        starts.append(offset)
        offset += len(part) + 1
    return _LogicalLine(" ".join(parts), numbers, starts)


def _without_comment(line: str) -> str:
    """The line up to a shell comment: ``#`` unquoted at the start of a word (so the
    ``#egg=`` of a URL stays)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t;&|("):
            return line[:index]
    return line


def _words(line: str) -> list[str] | None:
    text = _without_comment(_DOCKER_INSTRUCTION.sub("", line))
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: the line is not shell prbot can read
        return None


def _commands(words: list[str]) -> Iterator[list[str]]:
    command: list[str] = []
    for word in words:
        if word in _SEPARATORS or set(word) <= set(";&|()<>"):
            if command:
                yield command
            command = []
        else:
            command.append(word)
    if command:
        yield command


def _install_arguments(command: list[str]) -> list[str] | None:
    """The arguments after ``install`` of a pip or ``uv pip`` command, else None."""
    while command and (command[0] in _SHELL_WORDS or re.match(r"^\w+=", command[0])):
        command = command[1:]  # "sudo", "env X=1", "CUDA_HOME=... uv pip install"
    for index, word in enumerate(command[:6]):
        program = word.rsplit("/", 1)[-1]
        if re.fullmatch(r"pip[0-9.]*", program):
            rest = command[index + 1 :]
            if rest[:1] == ["install"]:
                return rest[1:]
        if program == "uv" and command[index + 1 : index + 3] == ["pip", "install"]:
            return command[index + 3 :]
    return None


def _named(argument: str) -> str | None:
    """The canonical distribution an install argument names, or None."""
    if "$" in argument or "*" in argument or "`" in argument:
        return None  # built at run time: nothing prbot can know
    if URL_LIKE.match(argument) or argument.startswith((".", "/", "~")):
        return name_from_url(argument)
    if not _NAMED.match(argument):
        return None
    parsed = parse_requirement_text("<install>", 0, argument)
    return parsed.name if isinstance(parsed, RequirementLine) else None


def installs_in(path: str, text: str) -> list[Install]:
    """Every named distribution the install commands of one file install.

    Raises :class:`~bot.core.limits.InputRejected` when the file is over the size bound.
    """
    check_size(path, text, MAX_REQUIREMENTS_BYTES, "an install script")
    found: list[Install] = []
    for line in _logical_lines(text):
        if "install" not in line.text:
            continue  # cheap test first: most lines install nothing
        # Arguments come in order: each is looked for after the previous one, so finding
        # their physical lines is one pass over the text (and stops at the first miss).
        cursor: int | None = 0
        for command in _commands(_words(line.text) or []):
            arguments = _install_arguments(command)
            if arguments is None:
                continue
            skip = False
            for argument in arguments:
                if skip:
                    skip = False
                elif argument in _VALUE_OPTIONS:
                    skip = True
                elif argument.startswith("-"):
                    continue  # a flag, or --option=value
                elif len(found) >= MAX_INSTALLS_PER_FILE:
                    raise InputRejected(
                        path, f"names over {MAX_INSTALLS_PER_FILE:,} installs; not read in full"
                    )
                elif name := _named(argument):
                    at = line.text.find(argument, cursor) if cursor is not None else -1
                    cursor = at + len(argument) if at >= 0 else None
                    found.append(Install(name, path, line.line_at(max(at, 0))))
    return found


def installs_in_files(files: Iterable[tuple[str, str]], problems: list[str]) -> list[Install]:
    """The installs of every (path, text), at most ``MAX_INSTALL_SCRIPTS`` files."""
    found: list[Install] = []
    for count, (path, text) in enumerate(files):
        if count >= MAX_INSTALL_SCRIPTS:
            problems.append(
                f"over {MAX_INSTALL_SCRIPTS} install scripts match the rule: the rest were not read"
            )
            break
        try:
            found += installs_in(path, text)
        except InputRejected as exc:
            problems.append(str(exc))
    return found
