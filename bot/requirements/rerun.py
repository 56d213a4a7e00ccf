"""Re-running a compiled file's recorded ``uv pip compile`` command on the head tree.

The command and every file it reads come from the PR. uv follows ``-r``/``-c`` lines, path
requirements and links on its own, so before it runs, everything it would read is checked
on the *flattened* inputs (the ``.in``, its constraints and all they include): every file
must be a regular file inside the exported tree, no line may name an absolute path, a path
outside the tree or a location :mod:`bot.requirements.sources` refuses, and the header may
only use options known to read nothing else. Anything else is a finding ("not re-run: …"),
never a read.
"""

from __future__ import annotations

import difflib
import re
import tarfile
from pathlib import Path
from typing import Any, NamedTuple

from bot.core.sections import CommandRunner
from bot.core.snapshot import TreeReader
from bot.requirements.compiled import (
    FILE_OPTIONS,
    OUTPUT_OPTIONS,
    CompiledFile,
    compiled_sources,
)
from bot.requirements.graph import RequirementTree
from bot.requirements.parser import OptionLine, include_target
from bot.requirements.resolve import failure_cause, scrub_paths
from bot.requirements.sources import SourcePolicy

# Header options that only steer the resolution: passed on as they are.
_PLAIN_VALUE_OPTIONS = {
    "--index-strategy",
    "--torch-backend",
    "--python-platform",
    "--python-version",
    "--no-emit-package",
    "--unsafe-package",
    "--extra",
    "--group",
    "-P",
    "--upgrade-package",
    "--resolution",
    "--prerelease",
    "--exclude-newer",
    "--annotation-style",
    "--custom-compile-command",
    "--no-binary",
    "--only-binary",
}
# Header options that name where packages come from: checked like a requirement file's.
_INDEX_VALUE_OPTIONS = {
    "-i": "index-url",
    "--index-url": "index-url",
    "--default-index": "index-url",
    "--extra-index-url": "extra-index-url",
    "--index": "extra-index-url",
    "-f": "find-links",
    "--find-links": "find-links",
}
_FLAGS = {
    "--universal",
    "--generate-hashes",
    "--no-annotate",
    "--no-header",
    "--strip-extras",
    "--no-strip-extras",
    "--no-strip-markers",
    "--all-extras",
    "--no-deps",
    "--no-index",
    "--no-build",
    "--no-build-isolation",
    "--upgrade",
    "-U",
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "--native-tls",
    "--offline",
    "--no-cache",
    "--refresh",
    "--no-config",
    "--no-sources",
}
_VERSION = re.compile(r"^\d+(\.\d+){0,2}$")


def safe_command(
    compiled: CompiledFile, policy: SourcePolicy
) -> tuple[list[str] | None, str | None]:
    """(arguments for uv after ``pip compile``, None) or (None, why it is not re-run)."""
    argv: list[str] = []
    tokens = iter(compiled.command)
    for token in tokens:
        if token.startswith("--") and "=" in token:
            option, value = token.split("=", 1)
        elif token.startswith("-") and token not in _FLAGS:
            option, value = token, next(tokens, None)
        else:
            option, value = token, None
        if option in _FLAGS:
            argv.append(option)
        elif not option.startswith("-"):
            if include_target("", option) is None:
                return None, f"input {option} is outside the repository"
            if not option.endswith((".in", ".txt")):  # setup.py, pyproject.toml: a build
                return None, f"input {option} is not a requirement file"
            argv.append(option)
        elif value is None:
            return None, f"option {option} has no value"
        elif option in OUTPUT_OPTIONS:
            continue  # the output goes to stdout, never over a file
        elif option in FILE_OPTIONS:
            if include_target("", value) is None:
                return None, f"{option} {value} is outside the repository"
            argv += [option, value]
        elif option in ("-p", "--python"):
            if not _VERSION.match(value):  # a path would make uv run that interpreter
                return None, f"{option} {value} is not a Python version"
            argv += [option, value]
        elif option in _INDEX_VALUE_OPTIONS:
            url = value.split("=", 1)[1] if option == "--index" and "=" in value else value
            line = OptionLine(compiled.path, 2, _INDEX_VALUE_OPTIONS[option], url, token)
            refused = policy.check_option(line)
            if refused is not None:
                return None, f"header option {option} {url}: {refused.reason}"
            argv += [option, value]
        elif option in _PLAIN_VALUE_OPTIONS:
            argv += [option, value]
        else:
            return None, f"header option {option} is not one prbot re-runs"
    return argv, None


def inputs_problem(
    compiled: CompiledFile, tree: RequirementTree, policy: SourcePolicy
) -> str | None:
    """Why uv may not read the flattened inputs as they are, or None."""
    closure = tree.closure(compiled.inputs, compiled.constraints)
    if closure.problems:
        problem = closure.problems[0]
        return f"{problem.location()}: {problem.message}"
    for line in closure.requirements + closure.constraints:
        if line.is_local:
            return f"{line.file}:{line.line}: {line.text} is a local path; only files are read"
        refused = policy.check_requirement(line)
        if refused is not None:
            return f"{line.file}:{line.line}: {refused.reason}"
    for option in closure.options:
        if option.option == "find-links" and "://" not in (option.value or ""):
            return f"{option.file}:{option.line}: --find-links names a local path"
        refused = policy.check_option(option)
        if refused is not None:
            return f"{option.file}:{option.line}: {refused.reason}"
    return None


def exported_problem(root: Path, sources: list[str]) -> str | None:
    """Why a file uv reads is not a regular file inside ``root`` (a link, a link's target)."""
    resolved_root = root.resolve()
    for source in sources:
        path = root
        for part in Path(source).parts:
            path = path / part
            if path.is_symlink():
                return f"{source} is reached through a symbolic link; links are not followed"
        if not path.is_file():
            return f"{source} is not a regular file"
        if resolved_root not in path.resolve().parents:
            return f"{source} resolves outside the tree"
    return None


def _with_header(committed: str, body: list[str]) -> str:
    """The committed file's header comment (the command that made it) over a fresh body."""
    lines = committed.splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line)
    return "\n".join([*header, *body]) + "\n"


def _body(text: str) -> list[str]:
    lines = text.splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return lines


class Rerun(NamedTuple):
    """What re-running a compiled file gave: the outcome, its diff or cause, and (when it
    differs) the whole file as the command writes it, committed header kept: the fix."""

    outcome: str
    detail: str
    fixed_text: str | None = None


def rerun_compiled(*args: Any, **kwargs: Any) -> tuple[str, str]:
    """(outcome, unified diff or cause): :func:`rerun_compiled_file` without the fixed text."""
    outcome, detail, _ = rerun_compiled_file(*args, **kwargs)
    return outcome, detail


def rerun_compiled_file(
    compiled: CompiledFile,
    head: TreeReader,
    runner: CommandRunner | None,
    uv: str,
    work_dir: Path,
    env: dict[str, str],
    *,
    extra_options: list[str],
    timeout: float,
    max_diff_lines: int = 60,
    policy: SourcePolicy | None = None,
) -> Rerun:
    """Re-run the recorded command on the head tree (see :class:`Rerun`).

    ``extra_options`` are the rules' (an operator's, passed as they are); ``policy`` says
    what the PR's own index options may do (by default, a trusted author's).
    """
    policy = policy or SourcePolicy(trusted=True)
    if compiled.problem:
        return Rerun("skipped", compiled.problem)
    command, refused = safe_command(compiled, policy)
    tree = RequirementTree(head)
    refused = refused or inputs_problem(compiled, tree, policy)
    if refused or command is None:
        return Rerun("skipped", f"not re-run: {refused}")
    root = work_dir / "compiled" / compiled.path.replace("/", "__")
    sources = compiled_sources(compiled, tree)
    try:
        head.export(root, sources)
    except tarfile.FilterError as exc:  # AbsoluteLinkError, LinkOutsideDestinationError…
        name = getattr(getattr(exc, "tarinfo", None), "name", "a file")
        return Rerun("skipped", f"not re-run: {name} is a link outside the tree")
    except tarfile.TarError as exc:
        why = f"the tree could not be exported ({type(exc).__name__})"
        return Rerun("skipped", f"not re-run: {why}")
    refused = exported_problem(root, sources)
    if refused:
        return Rerun("skipped", f"not re-run: {refused}")
    argv = [uv, "pip", "compile", *command, "--no-header", *extra_options]
    result = runner.run(argv, cwd=root, env=env, timeout=timeout)
    if result.timed_out:
        return Rerun("skipped", f"uv timed out after {timeout:g}s")
    if result.returncode != 0:
        return Rerun("failed", failure_cause(result.stderr))
    committed_text = head.read_text(compiled.path) or ""
    committed = _body(committed_text)
    fresh = _body(scrub_paths(result.stdout))  # uv's output is shown too: no local path
    diff = list(difflib.unified_diff(committed, fresh, compiled.path, "re-run", lineterm="", n=1))
    if not diff:
        return Rerun("same", "")
    if len(diff) > max_diff_lines:
        diff = diff[:max_diff_lines] + [f"… {len(diff) - max_diff_lines} more lines"]
    return Rerun("differs", "\n".join(diff), _with_header(committed_text, fresh))
