"""Import names to the distributions a repository declares.

``import cutlass`` is satisfied by ``nvidia-cutlass-dsl``; no rule of spelling derives one
from the other, and vLLM's dependencies cannot be installed here to read their metadata.
So the names come from, in order: the rule's own mapping (curated, for the names below);
the packaging metadata of the distributions prbot's own environment has installed (their
``top_level.txt`` / ``RECORD``, through ``importlib.metadata.packages_distributions``);
and the naming conventions (``foo`` -> ``foo``, ``py-foo``, ``foo-python``...). A
declared distribution named ``foo-<something>`` (``quack-kernels``,
``mooncake-transfer-engine``) or ``<something>-foo`` (``apache-tvm-ffi``) also counts for
``foo``.

Declarations are read with :mod:`bot.requirements.parser`: requirement files, a
pyproject's ``[project]`` dependencies, extras and build requirements, and the
``install_requires`` / ``extras_require`` literals of a ``setup.py``.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from bot.core.limits import (
    MAX_REQUIREMENTS_BYTES,
    InputRejected,
    check_size,
    parse_python,
    walk,
)
from bot.requirements.parser import (
    RequirementLine,
    parse_pyproject_build_requires,
    parse_requirement_file,
    parse_requirement_text,
)

_SETUP_KEYWORDS = {"install_requires", "extras_require", "setup_requires", "tests_require"}


@dataclass
class Declared:
    """Canonical distribution name -> the file that declares it; and what could not be read."""

    names: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # Names declared only by an install command: name -> "path:line" of the command.
    installed: dict[str, str] = field(default_factory=dict)
    # Names declared only as optional extras (setup.py extras_require, pyproject
    # optional-dependencies): not installed by default.
    extras: set[str] = field(default_factory=set)

    def add(self, lines: Iterable[RequirementLine], *, extra: bool = False) -> None:
        for line in lines:
            if line.name in self.names:
                if not extra:
                    self.extras.discard(line.name)
                continue
            self.names[line.name] = line.file
            if extra:
                self.extras.add(line.name)

    def by_default(self, name: str) -> bool:
        """Whether ``name`` is declared other than as an optional extra."""
        return name in self.names and name not in self.extras


def _pyproject(path: str, text: str, declared: Declared) -> None:
    declared.add(parse_pyproject_build_requires(path, text).requirements)
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError as exc:
        declared.problems.append(f"`{path}` is not valid TOML: {exc}")
        return
    if not isinstance(project, dict):
        return
    dependencies = project.get("dependencies")
    _add_specs(path, list(dependencies) if isinstance(dependencies, list) else [], declared)
    extras = project.get("optional-dependencies")
    specs: list[object] = []
    for extra in extras.values() if isinstance(extras, dict) else []:
        specs.extend(extra if isinstance(extra, list) else [])
    _add_specs(path, specs, declared, extra=True)


def _add_specs(
    path: str, specs: Iterable[object], declared: Declared, *, extra: bool = False
) -> None:
    for spec in specs:
        if isinstance(spec, str):
            parsed = parse_requirement_text(path, 0, spec.strip())
            if isinstance(parsed, RequirementLine):
                declared.add([parsed], extra=extra)


def _setup_py(path: str, text: str, declared: Declared) -> None:
    for node in walk(parse_python(text, path), path):
        if isinstance(node, ast.keyword) and node.arg in _SETUP_KEYWORDS:
            # The keys of extras_require name extras, not distributions.
            keys = {
                id(key)
                for child in walk(node.value, path)
                if isinstance(child, ast.Dict)
                for key in child.keys
                if key is not None
            }
            specs = [
                child.value
                for child in walk(node.value, path)
                if isinstance(child, ast.Constant)
                and isinstance(child.value, str)
                and id(child) not in keys
            ]
            _add_specs(path, specs, declared, extra=node.arg == "extras_require")


def declared_distributions(files: Iterable[tuple[str, str]]) -> Declared:
    """Every distribution the (path, text) files declare, by canonical name."""
    declared = Declared()
    for path, text in files:
        try:
            check_size(path, text, MAX_REQUIREMENTS_BYTES, "a requirement file")
            if path.endswith("pyproject.toml"):
                _pyproject(path, text, declared)
            elif path.endswith(".py"):
                _setup_py(path, text, declared)
            else:
                declared.add(parse_requirement_file(path, text).requirements)
        except InputRejected as exc:
            declared.problems.append(str(exc))
    return declared


@functools.cache
def _installed_metadata() -> dict[str, tuple[str, ...]]:
    # Built from each installed distribution's top_level.txt or RECORD.
    return {
        module: tuple(canonicalize_name(d) for d in dists)
        for module, dists in importlib.metadata.packages_distributions().items()
    }


def candidate_distributions(module: str, mapped: list[str]) -> list[str]:
    """Distribution names that may provide ``module``, most trusted source first."""
    base = canonicalize_name(module)
    names = [canonicalize_name(m) for m in mapped]
    names += _installed_metadata().get(module, ())
    names += [base, f"py{base}", f"py-{base}", f"{base}-python", f"python-{base}"]
    return list(dict.fromkeys(names))


def declared_by_default(module: str, mapped: list[str], declared: Declared) -> bool:
    """Whether any distribution that may provide ``module`` is declared other than as an
    optional extra (``flashinfer-python`` in a requirement file, beside a ``flashinfer``
    extra)."""
    names = candidate_distributions(module, mapped)
    prefix, suffix = canonicalize_name(module) + "-", "-" + canonicalize_name(module)
    names += [n for n in declared.names if n.startswith(prefix) or n.endswith(suffix)]
    return any(declared.by_default(name) for name in names)


def declared_as(module: str, mapped: list[str], declared: Declared) -> str | None:
    """The declared distribution that provides ``module``, or None."""
    for name in candidate_distributions(module, mapped):
        if name in declared.names:
            return name
    # A vendor's or a project's prefix or suffix: quack-kernels for quack, apache-tvm-ffi for
    # tvm_ffi (declared in vLLM 0.33's requirements/cuda.txt).
    prefix, suffix = canonicalize_name(module) + "-", "-" + canonicalize_name(module)
    return next(
        (name for name in sorted(declared.names) if name.startswith(prefix)),
        next((name for name in sorted(declared.names) if name.endswith(suffix)), None),
    )
