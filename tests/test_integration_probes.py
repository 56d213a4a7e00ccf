"""Packages the code probes for (find_spec), in one file, one hop away, or anywhere."""

from __future__ import annotations

from bot.integration.probes import (
    module_path,
    module_probes,
    probed_in_tree,
    probes_needed_by,
)

# Shaped like vLLM 0.30's vllm/utils/b12x.py: the probe sits in a module-level constant
# that the accessors reach through two other names.
B12X_UTILS = """\
import importlib
import importlib.util

_HAS_B12X = importlib.util.find_spec("b12x") is not None


def _import_submodule(module_name):
    if not _HAS_B12X:
        return None
    return importlib.import_module(module_name)


_SUBMODULES = {name: _import_submodule(name) for name in ("b12x.attention.paged",)}


def get_b12x_paged_attention():
    return _SUBMODULES.get("b12x.attention.paged")


def unrelated():
    return 1
"""
# Shaped like vLLM 0.18's vllm/utils/import_utils.py: a helper around find_spec.
IMPORT_UTILS = """\
import importlib.util


def _has_module(module_name: str) -> bool:
    return importlib.util.find_spec(module_name) is not None


def has_nixl_ep() -> bool:
    return _has_module("nixl_ep")


def has_deep_gemm() -> bool:
    return _has_module("deep_gemm.sub")
"""
BACKEND = """\
from vllm.utils.b12x import get_b12x_paged_attention
from vllm.utils.missing import gone
from vllm.config import VllmConfig


class B12xBackend:
    @classmethod
    def supports_combination(cls):
        return None if get_b12x_paged_attention() else "Install vllm[b12x]"
"""


def test_probes_are_found_by_the_name_that_holds_them_and_through_wrappers():
    probes = module_probes("vllm/utils/import_utils.py", IMPORT_UTILS)
    assert [(p.package, p.line) for p in probes.by_name["has_nixl_ep"]] == [("nixl_ep", 9)]
    assert [p.package for p in probes.all] == ["nixl_ep", "deep_gemm"]
    b12x = module_probes("vllm/utils/b12x.py", B12X_UTILS)
    assert [p.where for p in b12x.reached_from("get_b12x_paged_attention")] == [
        "vllm/utils/b12x.py:4"
    ]
    assert b12x.reached_from("unrelated") == []


def test_a_module_needs_the_probes_its_imported_names_reach_one_hop_away():
    files = {
        "vllm/utils/b12x.py": B12X_UTILS,
        "vllm/config/__init__.py": "X = 1\n",
        "vllm/v1/attention/backends/b12x.py": BACKEND,
    }
    problems: list[str] = []
    probes = probes_needed_by(
        "vllm/v1/attention/backends/b12x.py", BACKEND, files.get, files.__contains__, problems
    )
    assert [p.package for p in probes] == ["b12x"] and problems == []
    path = module_path("vllm.v1.attention.backends.b12x.B12xBackend", files.__contains__)
    assert path == "vllm/v1/attention/backends/b12x.py"
    assert module_path("vllm.config.VllmConfig", files.__contains__) == "vllm/config/__init__.py"
    assert module_path("elsewhere.Thing", files.__contains__) is None
    assert module_path("a." * 10_000 + "B", files.__contains__) is None  # bounded
    assert module_path("vllm..utils", files.__contains__) is None


def test_unparsable_files_are_problems_not_crashes():
    files = {"vllm/utils/b12x.py": "def broken(:\n    find_spec('b12x')\n"}
    problems: list[str] = []
    backend = "from vllm.utils.b12x import get\n"
    assert probes_needed_by("b.py", backend, files.get, files.__contains__, problems) == []
    assert problems and problems[0].startswith("`vllm/utils/b12x.py` does not parse")
    problems.clear()
    assert probes_needed_by("b.py", "def f(:\n", files.get, files.__contains__, problems) == []
    assert problems and problems[0].startswith("`b.py`")


def test_a_tree_is_searched_for_probes_of_the_modules_wanted():
    files = {
        "vllm/a.py": "import os\n",
        "vllm/utils/import_utils.py": IMPORT_UTILS,
        "vllm/hpc.py": 'import importlib.util\nOK = importlib.util.find_spec("hpc")\n',
        "vllm/broken.py": 'find_spec("hpc"\n',
    }
    problems: list[str] = []
    found = probed_in_tree(list(files), files.get, {"hpc", "nixl_ep", "kvcr"}, problems)
    assert {m: p.where for m, p in found.items()} == {
        "hpc": "vllm/hpc.py:2",
        "nixl_ep": "vllm/utils/import_utils.py:9",
    }
    # Once `hpc` is found the broken file quotes nothing still wanted: it is not parsed.
    assert problems == []
    found = probed_in_tree(["vllm/broken.py"], files.get, {"hpc"}, problems)
    assert found == {} and problems[0].startswith("`vllm/broken.py`")
