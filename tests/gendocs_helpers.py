"""Shared by the tests/test_gendocs*.py files: the fixture tree and small edits to it."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "gendocs" / "tree"
DOC = "docs/design/attention_backends.md"
REGISTRY = "vllm/v1/attention/backends/registry.py"
CUDA = "vllm/platforms/cuda.py"


def fixture_files() -> dict[str, str]:
    """Every file of the fixture tree, relative path -> text."""
    return {
        p.relative_to(FIXTURE).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(FIXTURE.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def copy_fixture(dest: Path) -> Path:
    shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def replaced(text: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced once; fails loudly if the fixture moved on."""
    assert old in text, f"fixture no longer contains {old!r}"
    return text.replace(old, new, 1)


def edit(root: Path, rel: str, old: str, new: str) -> None:
    target = root / rel
    target.write_text(replaced(target.read_text(encoding="utf-8"), old, new), encoding="utf-8")


# A backend added to the registry (and its module), modelled on a real one.
NEW_BACKEND_ENTRY = (
    '    CPU_ATTN = "vllm.v1.attention.backends.cpu_attn.CPUAttentionBackend"\n',
    '    CPU_ATTN = "vllm.v1.attention.backends.cpu_attn.CPUAttentionBackend"\n'
    '    TREE_ATTN = "vllm.v1.attention.backends.tree_attn.TreeAttentionBackend"\n',
)
NEW_BACKEND_MODULE = (
    "vllm/v1/attention/backends/tree_attn.py",
    "class TreeAttentionBackend:\n"
    "    @classmethod\n"
    "    def get_supported_head_sizes(cls) -> list[int]:\n"
    "        return [64, 128]\n",
)
