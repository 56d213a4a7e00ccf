"""Imports read with ast: top-level module, line, and the guard that makes one optional."""

from __future__ import annotations

import pytest

from bot.core.limits import InputRejected
from bot.core.snapshot import DirTree
from bot.integration.imports import imported_anywhere, imports_in

# Shaped like vLLM 0.21: vllm/transformers_utils/processors/mimo_v2_omni.py and
# vllm/tool_parsers/cohere_command_tool_parser.py.
GUARDED = """\
import importlib.util
from typing import TYPE_CHECKING

import numpy as np
import cutlass.cute as cute

try:
    from torchcodec.decoders import AudioDecoder
    _HAS_TORCHCODEC = True
except ImportError:
    AudioDecoder = None

try:
    from cohere_melody import PyFilter
except (ValueError, ModuleNotFoundError) as e:
    raise ImportError("pip install cohere_melody") from e

if importlib.util.find_spec("fastokens") is not None:
    import fastokens

if TYPE_CHECKING:
    from _typeshed import Incomplete

with contextlib.suppress(ImportError):
    import humming.layer

try:
    import never_guarded
except KeyError:
    pass


def lazy():
    from . import sibling
    from tokenspeed_mla import decode
    return decode
"""


def test_each_import_has_its_module_line_and_guard():
    sites = {site.module: site for site in imports_in("vllm/x.py", GUARDED)}
    assert sites["numpy"].guard is None and sites["numpy"].line == 4
    assert sites["cutlass"].guard is None
    assert sites["torchcodec"].guard == "try/except ImportError"
    assert sites["cohere_melody"].guard == "try/except ModuleNotFoundError"
    assert sites["fastokens"].guard == "an importlib.util.find_spec check"
    assert sites["_typeshed"].typing_only
    assert sites["humming"].guard == "contextlib.suppress(ImportError)"
    # except KeyError does not guard an import; a function-level import is still required.
    assert sites["never_guarded"].guard is None
    assert sites["tokenspeed_mla"].guard is None and sites["tokenspeed_mla"].line == 35
    assert "sibling" not in sites and "" not in sites  # relative imports are the package's


def test_handlers_and_else_branches_are_not_guarded():
    source = (
        "try:\n    import a\nexcept ImportError:\n    import b\nelse:\n    import c\n"
        "if TYPE_CHECKING:\n    import d\nelse:\n    import e\n"
    )
    guards = {site.module: site.guard for site in imports_in("m.py", source)}
    assert guards == {
        "a": "try/except ImportError",
        "b": None,
        "c": None,
        "d": "if TYPE_CHECKING",
        "e": None,
    }


def test_a_string_mentioning_import_is_not_an_import():
    source = 'HELP = """\nimport secret_module\n"""\n# import commented_out\n'
    assert imports_in("m.py", source) == []


def test_unparsable_source_is_a_finding():
    with pytest.raises(InputRejected, match="does not parse"):
        imports_in("vllm/broken.py", "import (\n")


def test_imported_anywhere_reads_every_file_and_parses_only_candidates(tmp_path):
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "a.py").write_text("import torch.cuda\nfrom x import aiter\n")
    (tmp_path / "vllm" / "b.py").write_text("def f():\n    from aiter.ops import mla\n")
    (tmp_path / "vllm" / "c.py").write_text("import (\n")  # mentions nothing: never parsed
    (tmp_path / "vllm" / "d.py").write_text("import mooncake  (\n")  # a candidate that fails
    tree = DirTree(tmp_path)
    paths = sorted(p for p in tree.list_paths() if p.endswith(".py"))
    problems: list[str] = []
    found = imported_anywhere(tree, paths, {"aiter", "cuda", "mooncake"}, problems)
    # "import torch.cuda" imports torch; "from x import aiter" imports x.
    assert found == {"aiter"}
    assert problems == ["`vllm/d.py` does not parse (line 1): invalid syntax"]


def test_availability_checks_and_not_installed_marks_guard_what_follows():
    # Shaped like vLLM's entrypoints/cli/main.py (--omni), utils/import_utils.py (MoonEP)
    # and the nixl_ep / moonep lazy imports.
    source = """\
def omni():
    spec = importlib.util.find_spec("vllm_omni")
    if spec is None:
        sys.exit(1)
    from vllm_omni.entrypoints.cli.main import main


def moonep_ops():
    if not has_moonep():
        raise RuntimeError("MoonEP not available")
    from moonep._C import dispatch


def buffer():
    from nixl_ep import Buffer  # type: ignore[import-not-found]
    import plainly_required


def checked_but_not_exiting():
    if has_thing():
        log("present")
    import still_required
"""
    guards = {site.module: site.guard for site in imports_in("vllm/x.py", source)}
    assert guards["vllm_omni"] == "an availability check (find_spec / has_*)"
    assert guards["moonep"] == "an availability check (find_spec / has_*)"
    assert guards["nixl_ep"] == "a `type: ignore[import-not-found]` mark"
    assert guards["plainly_required"] is None
    assert guards["still_required"] is None
