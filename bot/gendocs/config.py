"""The ``checks.generated_docs`` rule block: which docs are generated, and how."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.core.sections import CheckRules

DEFAULT_FIX_COMMAND = "uv run prbot docs --repo . --write"


def _inside_repository(paths: list[str]) -> list[str]:
    # Outputs are read from the sandbox copy and written back by `prbot docs --write`: a path
    # leaving the repository would read or overwrite a file elsewhere.
    for path in paths:
        parts = PurePosixPath(path).parts
        if not path or path.startswith(("/", "\\")) or ".." in parts:
            raise ValueError(f"{path!r} is not a path inside the repository")
    return paths


class DocGenerator(BaseModel):
    """The repository's own generator of a doc: run sandboxed, its output is the expected doc.

    ``output``: ``python SCRIPT ARGS`` writes the whole doc to ``{output}`` (vLLM's
    pre-commit generator up to 0.26). ``mkdocs_gen_files``: the script fills the doc's
    ``--8<-- "gen:KEY"`` markers at docs-build time (vLLM from 0.27); prbot runs it with a
    stand-in for the ``mkdocs_gen_files`` module and keeps the blocks it fills.
    """

    model_config = ConfigDict(extra="forbid")

    script: str
    style: Literal["output", "mkdocs_gen_files"] = "output"
    args: list[str] = Field(default_factory=lambda: ["--output", "{output}"])
    # What the generator reads; the whole tree when empty.
    inputs: list[str] = Field(default_factory=list)
    timeout: float = Field(default=60.0, gt=0, le=600)

    _check_inputs = field_validator("inputs")(_inside_repository)

    @field_validator("script")
    @classmethod
    def _check_script(cls, value: str) -> str:
        _inside_repository([value])
        return value


class DocRule(BaseModel):
    """A doc whose tables come from a built-in extractor plus a table template."""

    model_config = ConfigDict(extra="forbid")

    path: str
    extractor: Literal["attention_backends"] = "attention_backends"
    template: str = "gendocs/attention_backends.md.j2"
    # committed: tables are in the file; markers: `--8<-- "gen:KEY"` filled at build time;
    # auto: markers when the file has any.
    mode: Literal["auto", "committed", "markers"] = "auto"
    # Paths whose change makes the doc worth checking on a PR (globs, ** allowed).
    feeds: list[str] = Field(default_factory=list)
    # The repository's own generator: a PR that edits it may legitimately change the prose.
    generator: list[str] = Field(default_factory=list)
    # How to run that generator, first match wins: the first whose script exists in the
    # revision the generator comes from and whose style fits the doc (committed / markers).
    generators: list[DocGenerator] = Field(default_factory=list)
    fix_command: str = DEFAULT_FIX_COMMAND
    # Registry entries that are not backends with a table row.
    skip_backends: list[str] = Field(default_factory=lambda: ["CUSTOM", "TORCH_SDPA"])


class HookRule(BaseModel):
    """A file produced by a command of the repository's own (e.g. a pre-commit generator)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    command: list[str] = Field(min_length=1)
    outputs: list[str] = Field(min_length=1)
    feeds: list[str] = Field(default_factory=list)
    # The generator's own files. A PR that changes them gets the base revision's copy
    # unless its author is trusted.
    tooling: list[str] = Field(default_factory=list)
    # What the command reads; the whole tree when empty.
    inputs: list[str] = Field(default_factory=list)
    ok_exit_codes: list[int] = Field(default_factory=lambda: [0])
    timeout: float = Field(default=120.0, gt=0)
    fix_command: str | None = None

    _check_paths = field_validator("outputs", "tooling", "inputs")(_inside_repository)


class GeneratedDocsRules(CheckRules):
    docs: list[DocRule] = Field(default_factory=list)
    hooks: list[HookRule] = Field(default_factory=list)
