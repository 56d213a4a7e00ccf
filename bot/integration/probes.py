"""Packages a repository probes for: how it says "this one is optional" in its own code.

vLLM never imports ``hpc`` or ``b12x`` blind: it asks first, ``importlib.util.find_spec(
"hpc") is None`` (``vllm/utils/hpc.py``), ``_HAS_B12X = importlib.util.find_spec("b12x")
is not None`` (``vllm/utils/b12x.py``), ``_has_module("nixl_ep")`` (a helper around
``find_spec``). A package the code probes for is one the project expects to be missing
in some installs, which is what an optional dependency is. Two uses:

- an import of a probed package is optional, even when the import statement itself is
  bare (the probe sits in another function or file);
- a registry member that needs a probed package no requirement file installs by default
  is an opt-in backend (``HPC_ATTN``, ``B12X``): :mod:`bot.integration.opt_in`.

A probe is a call of a function named ``find_spec`` (or of a function of the same file
that passes its first parameter to ``find_spec``) whose first argument is a string
literal. Every parse is bounded (``bot.core.limits``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.core.limits import InputRejected, parse_python, walk
from bot.integration.entries import dotted

# The first-party modules a registry member's module imports names from, read to find the
# probes those names reach (one hop: vllm/v1/attention/backends/b12x.py -> vllm/utils/b12x).
MAX_HOP_MODULES = 40
# Dotted names deeper than this are not module paths (vLLM's deepest: 9 parts).
MAX_MODULE_DEPTH = 32

Reader = Callable[[str], str | None]  # a repository path -> its text, or None
Exists = Callable[[str], bool]  # whether the repository has a path


@dataclass(frozen=True)
class Probe:
    package: str  # top-level module probed: "hpc" for find_spec("hpc.ops")
    path: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class ModuleProbes:
    """The probes of one Python file, by the top-level name (function, class, variable)
    whose definition holds them, and which top-level names each one refers to."""

    by_name: dict[str, list[Probe]] = field(default_factory=dict)
    refers_to: dict[str, set[str]] = field(default_factory=dict)

    @property
    def all(self) -> list[Probe]:
        return [probe for probes in self.by_name.values() for probe in probes]

    def reached_from(self, name: str) -> list[Probe]:
        """The probes ``name``'s definition holds or reaches through other top-level
        names of the file (``get_b12x_paged_attention`` -> ``_B12X_SUBMODULES`` ->
        ``_HAS_B12X``)."""
        seen, stack, found = set(), [name], []
        while stack and len(seen) < 10_000:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            found += self.by_name.get(current, [])
            stack.extend(n for n in self.refers_to.get(current, ()) if n in self.refers_to)
        return found


def _probe_wrappers(tree: ast.Module, path: str) -> set[str]:
    """Functions of the file that pass their first parameter to ``find_spec``."""
    wrappers = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.args.args:
            first = node.args.args[0].arg
            for child in walk(node, path):
                if (
                    isinstance(child, ast.Call)
                    and (dotted(child.func) or "").endswith("find_spec")
                    and child.args
                    and isinstance(child.args[0], ast.Name)
                    and child.args[0].id == first
                ):
                    wrappers.add(node.name)
                    break
    return wrappers


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return ["<module>"]


def module_probes(path: str, text: str) -> ModuleProbes:
    """Every probe of a Python file. Raises :class:`~bot.core.limits.InputRejected`."""
    tree = parse_python(text, path)
    wrappers = _probe_wrappers(tree, path)
    result = ModuleProbes()
    for statement in tree.body:
        probes, refers = [], set()
        for node in walk(statement, path):
            if isinstance(node, ast.Name):
                refers.add(node.id)
            elif isinstance(node, ast.Call) and node.args:
                name = dotted(node.func) or ""
                argument = node.args[0]
                if (name.endswith("find_spec") or name in wrappers) and (
                    isinstance(argument, ast.Constant) and isinstance(argument.value, str)
                ):
                    package = argument.value.split(".")[0]
                    if package:
                        probes.append(Probe(package, path, node.lineno))
        for name in _defined_names(statement):
            result.by_name.setdefault(name, []).extend(probes)
            result.refers_to.setdefault(name, set()).update(refers)
    return result


def module_path(dotted_name: str, exists: Exists) -> str | None:
    """The repository file of the longest module prefix of ``dotted_name`` that exists
    (``pkg.mod.Class`` -> ``pkg/mod.py`` or ``pkg/mod/__init__.py``)."""
    parts = dotted_name.split(".")
    if len(parts) > MAX_MODULE_DEPTH or not all(parts):
        return None  # not a module path any repository has
    for end in range(len(parts), 0, -1):
        base = "/".join(parts[:end])
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if exists(candidate):
                return candidate
    return None


def probes_needed_by(
    path: str, text: str, read: Reader, exists: Exists, problems: list[str]
) -> list[Probe]:
    """The probes a module holds, and those the names it imports from other files of the
    repository reach (one hop, at most ``MAX_HOP_MODULES`` files). ``read(path)`` returns a
    file's text or None; ``exists(path)`` says whether the repository has it."""
    try:
        found = module_probes(path, text).all
        tree = parse_python(text, path)
    except InputRejected as exc:
        problems.append(str(exc))
        return []
    hops: dict[str, set[str]] = {}
    for node in walk(tree, path):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            target = module_path(node.module, exists)
            if target and target != path:
                hops.setdefault(target, set()).update(a.name for a in node.names)
    for target, names in list(hops.items())[:MAX_HOP_MODULES]:
        other = read(target)
        if not other or "find_spec" not in other:
            continue  # cheap test first: a probe needs find_spec somewhere in the file
        try:
            probes = module_probes(target, other)
        except InputRejected as exc:
            problems.append(str(exc))
            continue
        for name in names:
            found += probes.reached_from(name)
    return list(dict.fromkeys(found))


def probed_in_tree(
    paths: list[str], read: Reader, modules: set[str], problems: list[str]
) -> dict[str, Probe]:
    """For each of ``modules`` that some file among ``paths`` probes for, the first probe.

    A file is parsed only when its text has ``find_spec`` and one of the modules as a
    quoted string, so a whole tree costs one read per file and a parse of a handful.
    """
    wanted, found = set(modules), {}
    for path in paths:
        if not wanted:
            break
        text = read(path)
        if not text or "find_spec" not in text:
            continue
        quoted = {m for m in wanted if f'"{m}' in text or f"'{m}" in text}
        if not quoted:
            continue
        try:
            probes = module_probes(path, text).all
        except InputRejected as exc:
            problems.append(str(exc))
            continue
        for probe in probes:
            if probe.package in quoted and probe.package not in found:
                found[probe.package] = probe
        wanted -= set(found)
    return found
