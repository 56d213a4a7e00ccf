"""The import graph of bot/: no cycles between modules or folders, every folder imports only
the layers below it, and logic packages import nothing above them.

The graph is read from the source with ``ast``, so it holds every import: module level,
inside functions and under ``TYPE_CHECKING``. An import of ``a.b.c`` depends on ``a.b.c``
and on the packages ``a`` and ``a.b`` (their ``__init__`` runs first), except the packages
the importer itself sits in, which are already being imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"

# Pure logic over data; what they need from outside comes in through bot.core.sections.
LOGIC_PACKAGES = (
    "bot.requirements",
    "bot.gendocs",
    "bot.duplicates",
    "bot.integration",
    "bot.review",
    "bot.jobs",
)
# What drives the logic: a logic package importing one of these imports upward.
ABOVE_LOGIC = (
    "bot.checks",
    "bot.worker.handlers",
    "bot.worker.loop",
    "bot.intake.server",
    "bot.cli",
)
# bot/'s folders, top to bottom, in the order a delivery travels (docs/architecture.md): a
# folder imports only folders further down the list. The logic packages share one rank: they
# may use each other, but not in a cycle. bot/'s top level holds the entry point and the
# composition root (bot/service.py: settings -> database, intake, worker), which the commands
# start.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("bot.__main__",),
    ("bot.cli",),
    ("bot.service",),
    ("bot.testing",),
    ("bot.intake",),
    ("bot.worker",),
    ("bot.repair",),
    ("bot.github",),
    ("bot.engines",),
    ("bot.report",),
    ("bot.checks",),
    ("bot.store",),
    LOGIC_PACKAGES + ("bot.fixes",),
    ("bot.events",),
    ("bot.runtime",),
    ("bot.core",),
    ("bot.local",),
)
ROOT_MODULES_AT_MOST = 8
# The edges that hold SQL and GitHub clients; logic packages get their data handed in.
IO_EDGES = ("bot.store", "bot.github.app", "sqlalchemy", "github")


def module_files(root: Path = BOT) -> dict[str, Path]:
    """Dotted module name -> source file, for every module and package under ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _named(importer: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names one import statement asks for (``from a import b`` asks for a, a.b)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = importer.split(".")
        if not is_package:
            base.pop()
        base = base[: len(base) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [module, *(f"{module}.{alias.name}" for alias in node.names)]


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def imports_of(importer: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(modules of bot/ it depends on, every top-level dotted name it imports)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    own = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 2)}
    internal: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            # A module loaded by name (importlib.import_module("bot.x")) is an import too.
            if node.value in modules and node.value not in own:
                internal.add(node.value)
            continue
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for name in _named(importer, path.name == "__init__.py", node):
            names.add(name)
            parts = name.split(".")
            for size in range(1, len(parts) + 1):
                prefix = ".".join(parts[:size])
                if prefix in modules and prefix not in own:
                    internal.add(prefix)
    return internal, names


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: imports_of(name, path, modules)[0] for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def modules() -> dict[str, Path]:
    return module_files()


def test_the_import_graph_of_bot_has_no_cycles(modules):
    assert cycles(import_graph(modules)) == []


def folder_of(module: str, modules: dict[str, Path]) -> str:
    """The folder (package) a module sits in; a module at bot/'s top level is its own node."""
    path = modules[module]
    if path.name == "__init__.py":
        return module
    parent = module.rsplit(".", 1)[0]
    return module if parent == "bot" else parent


def folder_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Folder -> the folders its modules import (a parent package and its subpackages are
    folders of their own, so a subpackage importing its parent and back is a cycle too)."""
    graph: dict[str, set[str]] = {}
    for name, targets in import_graph(modules).items():
        source = folder_of(name, modules)
        edges = graph.setdefault(source, set())
        for target in targets:
            folder = folder_of(target, modules)
            # Importing bot.a.b.c runs bot/a/__init__.py first; that is no dependency on what
            # the package holds, only on its (empty or re-exporting) init.
            if folder != source and not (
                modules[target].name == "__init__.py" and _within(source, (target,))
            ):
                edges.add(folder)
    return graph


def layer_of(module: str) -> int | None:
    for rank, layer in enumerate(LAYERS):
        if _within(module, layer):
            return rank
    return None


def test_the_folder_graph_of_bot_has_no_cycles(modules):
    assert cycles(folder_graph(modules)) == []


def test_every_folder_of_bot_is_in_a_layer(modules):
    folders = {folder_of(name, modules) for name in modules}
    unplaced = sorted(
        f
        for f in folders
        if f.count(".") == 1 and f not in modules_at_root(modules) and layer_of(f) is None
    )
    assert unplaced == []


def modules_at_root(modules: dict[str, Path]) -> set[str]:
    return {
        name for name, path in modules.items() if path.parent == BOT and path.name != "__init__.py"
    }


def test_bot_top_level_holds_only_the_composition_root(modules):
    assert len(modules_at_root(modules)) <= ROOT_MODULES_AT_MOST


def test_folders_import_only_the_layers_below_them(modules):
    upward = []
    for name, targets in sorted(import_graph(modules).items()):
        source = layer_of(name)
        if source is None:  # bot/__init__.py
            continue
        for target in sorted(targets):
            rank = layer_of(target)
            if rank is None or rank < source:
                upward.append(f"{name} imports {target}")
    assert upward == []


def test_handlers_import_no_other_handler(modules):
    """Each handler stands alone; what they share lives in the context and the registry."""
    shared = {"bot.worker.handlers", "bot.worker.handlers.context", "bot.worker.handlers.registry"}
    reaching = [
        f"{name} imports {target}"
        for name, targets in sorted(import_graph(modules).items())
        if _within(name, ("bot.worker.handlers",)) and name not in shared
        for target in sorted(targets)
        if _within(target, ("bot.worker.handlers",)) and target not in shared
    ]
    assert reaching == []


def test_logic_packages_import_nothing_above_them(modules):
    upward = [
        f"{name} imports {target}"
        for name, targets in sorted(import_graph(modules).items())
        if _within(name, LOGIC_PACKAGES)
        for target in sorted(targets)
        if _within(target, ABOVE_LOGIC)
    ]
    assert upward == []


def test_logic_packages_hold_no_sql_and_no_github_client(modules):
    reaching = [
        f"{name} imports {imported}"
        for name, path in modules.items()
        if _within(name, LOGIC_PACKAGES)
        for imported in sorted(imports_of(name, path, modules)[1])
        if _within(imported, IO_EDGES)
    ]
    assert reaching == []


# The walker itself, on a package written for the purpose: it must see what it claims to.


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        target = tmp_path / "bot" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return module_files(tmp_path / "bot")


def test_the_walker_sees_function_level_relative_and_type_checking_imports(tmp_path):
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "def f():\n    from bot import b\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import X\n",
            "c.py": "import bot.a\n",
            "d.py": "import bot.c\n",
        },
    )
    graph = import_graph(modules)
    assert graph["bot.a"] == {"bot.b"} and graph["bot.b"] == {"bot.c"}
    assert cycles(graph) == [["bot.a", "bot.b", "bot.c"]]


def test_the_walker_sees_modules_loaded_by_name_and_folder_cycles(tmp_path):
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "",
            "a/x.py": "import importlib\nimportlib.import_module('bot.b.y')\n",
            "b/__init__.py": "",
            "b/y.py": "",
            "b/z.py": "from bot.a import x\n",
        },
    )
    assert import_graph(modules)["bot.a.x"] == {"bot.b.y"}
    assert cycles(import_graph(modules)) == []  # no module cycle ...
    assert cycles(folder_graph(modules)) == [["bot.a", "bot.b"]]  # ... but a folder cycle


def test_an_import_depends_on_the_packages_above_it_but_not_on_its_own(tmp_path):
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "pkg/__init__.py": "from bot.pkg import inner\n",
            "pkg/inner.py": "from bot.pkg import sibling\n",
            "pkg/sibling.py": "",
            "user.py": "from bot.pkg.inner import thing\n",
        },
    )
    graph = import_graph(modules)
    assert graph["bot.pkg.inner"] == {"bot.pkg.sibling"}  # its own package is under way
    assert graph["bot.user"] == {"bot.pkg", "bot.pkg.inner"}
    assert cycles(graph) == []


def test_test_modules_never_import_each_other():
    """Shared test data lives in conftest.py or a helpers module, not in another test file."""
    tests = Path(__file__).resolve().parent
    importing = []
    for path in sorted(tests.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            importing += [f"{path.name} imports {n}" for n in names if n.startswith("test_")]
    assert importing == []


def test_each_check_keeps_its_rule_model_in_its_logic_packages_config(modules):
    """The agreed place (bot/checks/base.py): ``bot/<package>/config.py`` of the one logic
    package the check drives, or the check's own module when it has no package."""
    from bot.checks import all_checks

    misplaced = []
    for check in all_checks():
        module = check.run.__module__
        _, names = imports_of(module, modules[module], modules)
        packages = {p for p in LOGIC_PACKAGES if any(_within(n, (p,)) for n in names)}
        expected = f"{packages.pop()}.config" if len(packages) == 1 else module
        if check.rules_model.__module__ != expected:
            misplaced.append(f"{check.name}: {check.rules_model.__module__}, not {expected}")
    assert misplaced == []
