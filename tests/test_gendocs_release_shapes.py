"""Source shapes the extractor meets across vLLM releases, each on a fixture written here.

Each snippet is modelled on what a release's source looks like (the release is named), and
the expected values are the ones that release's own generator writes for that shape.
"""

from __future__ import annotations

import ast
from pathlib import Path

from gendocs_helpers import copy_fixture

from bot.core.snapshot import DirTree
from bot.gendocs.attention_classes import factory_call
from bot.gendocs.attention_sources import FLASHINFER_UTILS, extract
from bot.gendocs.mla_prefill import (
    PLATFORM_INTERFACE,
    dimension_notes,
    mla_dimensions,
    platform_prefill_priorities,
)
from bot.gendocs.source import SourceTree

R1 = "(qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)"
V3 = "(qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256)"


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def test_prefill_dimensions_per_flash_attention_version():  # vLLM 0.26
    node = ast.parse(
        "class FlashAttnPrefillBackend:\n"
        "    @classmethod\n"
        "    def supports_mla_dimensions(cls, mla_dimensions):\n"
        "        r1 = MLADimensions(qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)\n"
        "        v3 = MLADimensions(qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256)\n"
        "        if get_flash_attn_version() == 4:\n"
        "            return mla_dimensions == r1\n"
        "        return mla_dimensions in (r1, v3)\n"
    ).body[0]
    dimensions, by_version = mla_dimensions(node)
    assert dimensions == [R1, V3]
    assert dimension_notes(dimensions, by_version) == f"{R1} (FA2/FA3/FA4) or {V3} (FA2/FA3 only)"


def test_prefill_dimensions_as_a_class_list():  # vLLM 0.24
    node = ast.parse(
        "class FlashInferPrefillBackend:\n"
        "    supported_mla_dimensions: ClassVar[list[MLADimensions]] = [\n"
        "        MLADimensions(qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),\n"
        "        MLADimensions(qk_nope_head_dim=128, qk_rope_head_dim=64),\n"  # incomplete: skipped
        "    ]\n"
    ).body[0]
    dimensions, by_version = mla_dimensions(node)
    assert (dimensions, by_version) == ([R1], {})
    assert dimension_notes(dimensions, by_version) == f"{R1} only"


def test_prefill_priorities_read_from_the_platform_class(tmp_path):  # vLLM 0.33
    write(
        tmp_path,
        PLATFORM_INTERFACE,
        "class Platform:\n"
        "    @classmethod\n"
        "    def get_mla_prefill_backend_cls(cls, config):\n"
        "        capability = cls.get_device_capability()\n"
        "        if capability.major == 10:\n"
        "            if config.mla_dimensions == V3:\n"
        "                priorities = [E.TRTLLM_RAGGED, E.FLASH_ATTN]\n"
        "            else:\n"
        "                priorities = [E.FLASH_ATTN, E.TRTLLM_RAGGED, E.FLASHINFER]\n"
        "        else:\n"
        "            priorities = [E.FLASH_ATTN]\n"
        "        return pick(priorities)\n",
    )
    found = platform_prefill_priorities(SourceTree(DirTree(tmp_path)))
    # The Blackwell order is the last list of its branch, nested ifs included; it orders the
    # table and its first backend gets the footnote marker.
    assert found["blackwell"] == ["FLASH_ATTN", "TRTLLM_RAGGED", "FLASHINFER"]


def test_flashinfer_with_an_xqa_path_has_three_rows(tmp_path):  # vLLM 0.25
    root = copy_fixture(tmp_path / "tree")
    write(
        root,
        FLASHINFER_UTILS,
        "def supports_trtllm_attention(is_prefill=False):\n"
        "    if current_platform.is_device_capability(90):\n"
        "        return not is_prefill\n"
        "    return current_platform.is_device_capability_family(100)\n",
    )
    model = extract(SourceTree(DirTree(root)))
    rows = {b.row_key: b for b in model.backends if b.name == "FLASHINFER"}
    assert list(rows) == ["FLASHINFER Native†", "FLASHINFER XQA†", "FLASHINFER trtllm-gen†"]
    assert rows["FLASHINFER XQA†"].compute_capability == "9.0"
    assert not rows["FLASHINFER XQA†"].sink and rows["FLASHINFER trtllm-gen†"].sink
    assert rows["FLASHINFER trtllm-gen†"].compute_capability == "10.x"


def test_a_factory_built_backend_is_recognised_not_an_error(tmp_path):  # vLLM 0.33
    tree = ast.parse(
        "from x import create_composite_attention_backend\n"
        "TritonFlashAttentionBackend = create_composite_attention_backend(A, B, name='T')\n"
        "Other = make.backend(A)\n"
    )
    assert factory_call(tree, "TritonFlashAttentionBackend") == "create_composite_attention_backend"
    assert factory_call(tree, "Other") == "backend"
    assert factory_call(tree, "Missing") is None
