"""The attention-backend extractor: real files read as syntax trees, never imported."""

from __future__ import annotations

import sys
from pathlib import Path

from gendocs_helpers import CUDA, REGISTRY, copy_fixture, edit

from bot.core.snapshot import DirTree
from bot.gendocs.attention_sources import extract
from bot.gendocs.render import render_tables
from bot.gendocs.source import SourceTree


def model_of(root: Path, skip=("CUSTOM", "TORCH_SDPA")):
    source = SourceTree(DirTree(root))
    return extract(source, list(skip)), source


def rows(model):
    return {b.row_key: b for b in model.backends}


def test_reads_registry_classes_variants_priorities_and_prefill(tmp_path):
    model, source = model_of(copy_fixture(tmp_path / "tree"))
    assert source.problems == []
    by_key = rows(model)
    assert set(by_key) == {
        "FLASH_ATTN FA2*",
        "FLASH_ATTN FA3*",
        "FLASH_ATTN FA4*",
        "TRITON_ATTN",
        "FLASHINFER Native†",
        "FLASHINFER TRTLLM†",
        "CPU_ATTN",
        "TRITON_MLA",
        "FLASHMLA",
    }
    fa3 = by_key["FLASH_ATTN FA3*"]
    assert fa3.compute_capability == "9.x" and fa3.sink and "fp8_e5m2" in fa3.kv_dtypes
    assert by_key["FLASH_ATTN FA2*"].compute_capability == "≥8.0"
    assert by_key["FLASHINFER Native†"].kv_dtypes == ["auto", "fp8"]  # nvfp4 is SM100-only
    assert by_key["FLASHINFER TRTLLM†"].compute_capability == "10.x"
    # DCP follows the impl class's base through a relative and an absolute import.
    assert by_key["FLASHINFER Native†"].dcp and by_key["TRITON_MLA"].dcp
    assert not by_key["FLASHMLA"].dcp
    assert by_key["CPU_ATTN"].compute_capability == "N/A"
    assert by_key["CPU_ATTN"].attention_types == "Decoder, Encoder Only"
    assert by_key["FLASHMLA"].is_mla and by_key["FLASHMLA"].compute_capability == "9.x-10.x"
    assert model.priorities["standard_sm100"] == ["FLASHINFER", "FLASH_ATTN", "TRITON_ATTN"]
    assert model.priorities["mla_default"] == ["TRITON_MLA", "FLASHMLA"]
    assert [p.name for p in model.prefill] == ["TRTLLM_RAGGED", "FLASH_ATTN"]
    assert model.prefill[0].default_on_blackwell and model.prefill[0].compute_capability == "10.x"


def test_never_imports_the_target_code(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    crash = "raise SystemExit(3)\n\n\ndef _get_backend_priorities"
    edit(root, CUDA, "def _get_backend_priorities", crash)
    model, _ = model_of(root)
    assert model.priorities and "vllm" not in sys.modules


def test_a_backend_file_that_does_not_parse_is_named(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    triton = "vllm/v1/attention/backends/triton_attn.py"
    edit(root, triton, "class TritonAttentionBackend:", "class (")
    model, source = model_of(root)
    [problem] = source.problems
    assert problem.path == "vllm/v1/attention/backends/triton_attn.py"
    assert "does not parse" in problem.message and problem.line
    assert model.unreadable == ["TRITON_ATTN"]
    assert "TRITON_ATTN" not in {b.name for b in model.backends}


def test_a_backend_file_too_deep_for_the_parser_is_named(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    triton = root / "vllm/v1/attention/backends/triton_attn.py"
    triton.write_text(triton.read_text() + "\nX = " + "-" * 100_000 + "1\n")
    model, source = model_of(root)
    [problem] = source.problems
    assert problem.path == "vllm/v1/attention/backends/triton_attn.py"
    assert "nested too deeply" in problem.message
    assert model.unreadable == ["TRITON_ATTN"]


def test_a_registry_entry_to_a_missing_class_or_module_is_named(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, REGISTRY, "triton_attn.TritonAttentionBackend", "triton_attn.GoneBackend")
    edit(root, REGISTRY, "mla.flashmla.FlashMLABackend", "mla.nowhere.FlashMLABackend")
    model, source = model_of(root)
    messages = [str(p) for p in source.problems]
    assert any(
        m.startswith("vllm/v1/attention/backends/triton_attn.py") and "GoneBackend" in m
        for m in messages
    )
    assert any(m.startswith(REGISTRY) and "mla/nowhere.py does not exist" in m for m in messages)
    assert sorted(model.unreadable) == ["FLASHMLA", "TRITON_ATTN"]


def test_an_unknown_capability_expression_is_a_warning_naming_file_and_line(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(
        root,
        "vllm/v1/attention/backends/flashinfer.py",
        "        return [64, 128, 256]",
        "        return list(HEAD_SIZES)",
    )
    edit(
        root,
        "vllm/v1/attention/backends/triton_attn.py",
        "    supported_kv_cache_dtypes: ClassVar[list[str]] = [",
        "    supported_kv_cache_dtypes: ClassVar[list[str]] = KV_DTYPES + [",
    )
    model, source = model_of(root)
    warnings = [p for p in source.problems if p.severity == "warning"]
    assert {p.path for p in warnings} == {
        "vllm/v1/attention/backends/flashinfer.py",
        "vllm/v1/attention/backends/triton_attn.py",
    }
    assert all(p.line for p in warnings)
    assert any("get_supported_head_sizes" in p.message for p in warnings)
    # The doc shows what vLLM's generator shows for such a class: the default.
    assert rows(model)["FLASHINFER TRTLLM†"].head_sizes == []


def test_a_missing_priority_function_is_an_error(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, CUDA, "def _get_backend_priorities", "def _renamed_priorities")
    model, source = model_of(root)
    assert model.priorities == {}
    assert [p.path for p in source.problems] == [CUDA]


def test_rendered_tables_collapse_empty_cells_like_vllms_writer(tmp_path):
    model, _ = model_of(copy_fixture(tmp_path / "tree"))
    tables = render_tables(model)
    assert "| `CPU_ATTN` | | fp16, bf16, fp32 |" in tables["table-standard"]
    assert tables["table-mla-prefill"].split("\n")[2].startswith("| `TRTLLM_RAGGED`‡ |")
    assert "table-minimax" not in tables  # only marker docs split those out


def test_a_huge_module_is_not_parsed_and_the_problem_says_why(tmp_path):
    # On main the extractor parsed any file the tree cap let through: one 7.9 MB module cost a
    # worker 3.1 GB, and two failed "nested too deeply" (issue 21, item 10).
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "big.py").write_text("x = [" + "0," * 600_000 + "]\n")
    (tmp_path / "vllm" / "bad.py").write_text("def f(:\n")
    source = SourceTree(DirTree(tmp_path))
    assert source.parse("vllm/big.py") is None and source.parse("vllm/bad.py") is None
    big, bad = source.problems
    assert (big.path, big.line) == ("vllm/big.py", None)
    assert big.message == "has over 500,000 tokens, the limit for Python source; not read"
    assert (bad.message, bad.line) == ("does not parse: invalid syntax", 1)
