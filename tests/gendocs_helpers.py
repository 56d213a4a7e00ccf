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


# --- A repository with its own doc generator (tests/test_gendocs_generator.py) -------------
# Modelled on vLLM 0.20: the committed doc is what the repository's generator writes, in
# that release's layout (no Non-Causal column; the MLA prefill table of `use_*_prefill()`
# switches with Enable / Disable columns), and one backend is built by a factory call
# (vLLM 0.33's TRITON_FLASH_ATTN).

GENERATOR = "tools/gen_attention_doc.py"
MKDOCS_GENERATOR = "docs/mkdocs/gen_files/gen_attention.py"
MKDOCS_HELPER = "docs/mkdocs/gen_files/generated_content.py"

_GENERATOR_SOURCE = '''\
"""Writes docs/design/attention_backends.md from the backend classes (ast only)."""
import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent
BACKENDS = ROOT / "vllm/v1/attention/backends"
SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def registry():
    tree = ast.parse((BACKENDS / "registry.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "AttentionBackendEnum":
            return {
                t.id: item.value.value
                for item in node.body
                if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)
                and item.value.value
                for t in item.targets
            }
    return {}


def row(name, class_path):
    module, _, cls = class_path.rpartition(".")
    path = ROOT / (module.replace(".", "/") + ".py")
    node = next(
        (n for n in ast.walk(ast.parse(path.read_text()))
         if isinstance(n, ast.ClassDef) and n.name == cls),
        None,
    )
    if node is None:  # built by a factory call: no class body, no row
        return None
    dtypes, heads, sink = "fp16, bf16", "Any", "❌"
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and getattr(item.target, "id", "") == "supported_dtypes":
            dtypes = ", ".join(SHORT.get(e.attr, e.attr) for e in item.value.elts)
        if isinstance(item, ast.FunctionDef) and item.name == "get_supported_head_sizes":
            ret = next(n for n in ast.walk(item) if isinstance(n, ast.Return))
            heads = ", ".join(str(e.value) for e in ret.value.elts)
        if isinstance(item, ast.FunctionDef) and item.name == "supports_sink":
            sink = "✅"
    return f"| `{name}` | {dtypes} | {heads} | {sink} |"


PREFILL = [
    ("use_flashinfer_prefill", "| FlashInfer | FlashInfer CUTLASS backend | {cc} | "
     "`-ac.disable_flashinfer_prefill=0` | `-ac.disable_flashinfer_prefill=1` | "
     "DeepSeek R1 dims only |"),
    ("use_cudnn_prefill", "| cuDNN | cuDNN-based attention | {cc} | `-ac.use_cudnn_prefill=1` "
     "| `-ac.use_cudnn_prefill=0` | |"),
]


def prefill_rows():
    tree = ast.parse((ROOT / "vllm/model_executor/layers/attention/mla_attention.py").read_text())
    rows = []
    for function, line in PREFILL:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == function:
                call = next(
                    n for n in ast.walk(node)
                    if isinstance(n, ast.Call) and getattr(n.func, "attr", "")
                    == "is_device_capability_family"
                )
                rows.append(line.format(cc=f"{call.args[0].value // 10}.x").replace("  ", " "))
    rows.append("| FlashAttention | FlashAttention varlen (FA2/FA3) | Any | Default fallback "
                "| Use other backends | FA3 on SM90, FA2 otherwise |")
    return rows


def generate():
    rows = [r for name, path in registry().items() if name != "CUSTOM" and (r := row(name, path))]
    return "\\n".join([
        "# Attention Backends",
        "",
        "Generated by `tools/gen_attention_doc.py`; do not edit by hand.",
        "",
        "## Standard Attention (MHA, MQA, GQA) Backends",
        "",
        "| Backend | Dtypes | Head Sizes | Sink |",
        "| ------- | ------ | ---------- | ---- |",
        *sorted(rows),
        "",
        "## MLA (Multi-head Latent Attention) Backends",
        "",
        "### Prefill Backends",
        "",
        "| Backend | Description | Compute Cap. | Enable | Disable | Notes |",
        "| ------- | ----------- | ------------ | ------ | ------- | ----- |",
        *prefill_rows(),
        "",
    ])


parser = argparse.ArgumentParser()
parser.add_argument("--output", default=str(ROOT / "docs/design/attention_backends.md"))
Path(parser.parse_args().output).write_text(generate())
'''

GENERATED_DOC = """\
# Attention Backends

Generated by `tools/gen_attention_doc.py`; do not edit by hand.

## Standard Attention (MHA, MQA, GQA) Backends

| Backend | Dtypes | Head Sizes | Sink |
| ------- | ------ | ---------- | ---- |
| `FLASH_ATTN` | fp16, bf16 | 64, 128 | ✅ |
| `TRITON_ATTN` | fp16, bf16, fp32 | Any | ❌ |

## MLA (Multi-head Latent Attention) Backends

### Prefill Backends

| Backend | Description | Compute Cap. | Enable | Disable | Notes |
| ------- | ----------- | ------------ | ------ | ------- | ----- |
| FlashInfer | FlashInfer CUTLASS backend | 10.x | `-ac.disable_flashinfer_prefill=0` \
| `-ac.disable_flashinfer_prefill=1` | DeepSeek R1 dims only |
| cuDNN | cuDNN-based attention | 10.x | `-ac.use_cudnn_prefill=1` | `-ac.use_cudnn_prefill=0` | |
| FlashAttention | FlashAttention varlen (FA2/FA3) | Any | Default fallback | Use other backends \
| FA3 on SM90, FA2 otherwise |
"""

_MKDOCS_HELPER_SOURCE = '''\
"""Fills `--8<-- "gen:KEY"` markers of a docs page at build time."""
from pathlib import Path

import mkdocs_gen_files
import regex as re

DOCS = Path(__file__).parent.parent.parent
_ANY = re.compile(r'--8<-- "gen:[^"]*"')


def fill_markers(page, blocks):
    text = (DOCS / page).read_text()
    for key, content in blocks.items():
        marker = f'--8<-- "gen:{key}"'
        if marker not in text:
            raise ValueError(f"{page}: missing marker {marker}")
        text = text.replace(marker, content)
    if leftover := _ANY.search(text):
        raise ValueError(f"{page}: unsubstituted marker {leftover.group()}")
    with mkdocs_gen_files.open(page, "w") as out:
        out.write(text)
'''

_MKDOCS_GENERATOR_SOURCE = '''\
"""mkdocs-gen-files script: the standard-backend table, filled into its marker."""
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generated_content import fill_markers  # noqa: E402

TOOLS = Path(__file__).parent.parent.parent.parent / "tools" / "gen_attention_doc.py"
sys.argv = [str(TOOLS), "--output", "/dev/null"]
generator = runpy.run_path(str(TOOLS), run_name="generator")
table = generator["generate"]().split("\\n")[6:10]
fill_markers("design/attention_backends.md", {"table-standard": "\\n".join(table)})
'''

MARKER_DOC = """\
# Attention Backends

## Standard Attention (MHA, MQA, GQA) Backends

--8<-- "gen:table-standard"
"""


def generator_repo_files() -> dict[str, str]:
    """The repository with its own generator, the doc committed as that generator writes it."""
    backends = "vllm/v1/attention/backends"
    return {
        f"{backends}/registry.py": (
            "import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
            '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
            '    TRITON_ATTN = "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend"\n'
            "    TRITON_FLASH_ATTN = (\n"
            '        "vllm.v1.attention.backends.triton_flash_attn.TritonFlashAttentionBackend"\n'
            "    )\n"
            '    CUSTOM = ""\n'
        ),
        f"{backends}/flash_attn.py": (
            "from typing import ClassVar\n\nimport torch\n\n\n"
            "class FlashAttentionBackend:\n"
            "    supported_dtypes: ClassVar[list[torch.dtype]] = [\n"
            "        torch.float16,\n        torch.bfloat16,\n    ]\n\n"
            "    @staticmethod\n    def get_supported_head_sizes() -> list[int]:\n"
            "        return [64, 128]\n\n"
            "    @classmethod\n    def supports_sink(cls) -> bool:\n        return True\n"
        ),
        # Defined in another file than the class it extends (a subclass chain across files).
        f"{backends}/triton_attn.py": (
            "from typing import ClassVar\n\nimport torch\n\n"
            "from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend\n\n\n"
            "class TritonAttentionBackend(FlashAttentionBackend):\n"
            "    supported_dtypes: ClassVar[list[torch.dtype]] = [\n"
            "        torch.float16,\n        torch.bfloat16,\n        torch.float32,\n    ]\n"
        ),
        f"{backends}/triton_flash_attn.py": (
            "from vllm.v1.attention.backends.composite import create_composite_attention_backend\n"
            "from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend\n"
            "from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend\n\n"
            "TritonFlashAttentionBackend = create_composite_attention_backend(\n"
            "    TritonAttentionBackend,\n    FlashAttentionBackend,\n"
            '    name="TritonFlashAttentionBackend",\n    backend_name="TRITON_FLASH_ATTN",\n'
            "    head_sizes=(256, 512),\n)\n"
        ),
        "vllm/model_executor/layers/attention/mla_attention.py": (
            "from vllm.platforms import current_platform\n\n\n"
            "def use_flashinfer_prefill() -> bool:\n"
            "    return current_platform.is_device_capability_family(100)\n\n\n"
            "def use_cudnn_prefill() -> bool:\n"
            "    return current_platform.is_device_capability_family(100)\n"
        ),
        "vllm/platforms/cuda.py": (
            "def _get_backend_priorities(use_mla, device_capability):\n"
            "    return [AttentionBackendEnum.FLASH_ATTN, AttentionBackendEnum.TRITON_ATTN]\n"
        ),
        GENERATOR: _GENERATOR_SOURCE,
        DOC: GENERATED_DOC,
    }


def mkdocs_repo_files() -> dict[str, str]:
    """The same repository once the doc became a page of markers filled at docs-build time."""
    files = generator_repo_files()
    files[DOC] = MARKER_DOC
    files[MKDOCS_HELPER] = _MKDOCS_HELPER_SOURCE
    files[MKDOCS_GENERATOR] = _MKDOCS_GENERATOR_SOURCE
    return files


def write_files(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


GENERATOR_RULES = f"""\
checks:
  generated_docs:
    docs:
      - path: {DOC}
        feeds: ["vllm/**/*.py"]
        generator: [{GENERATOR}, {MKDOCS_GENERATOR}, {MKDOCS_HELPER}]
        generators:
          - script: {GENERATOR}
            style: output
            timeout: 20
          - script: {MKDOCS_GENERATOR}
            style: mkdocs_gen_files
            timeout: 20
        fix_command: python {GENERATOR}
"""
