"""A generated repository shaped like an ML-systems project (vLLM's layout), for benchmarks
that need every check to do real work: attention backends with a registry and CUDA priority
lists, thousands of model and test modules, CUDA sources, requirement files with ``-r``/``-c``
includes and platform markers, a generated attention-backend doc and benchmark configs.

Everything is written from templates here; no file of any real project is copied. The
packages the requirement files name are published on a local index (benchmarks/_local_index.py)
so uv resolves them offline.
"""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BACKENDS_DIR = "vllm/v1/attention/backends"
REGISTRY = f"{BACKENDS_DIR}/registry.py"
DOC = "docs/design/attention_backends.md"
COMMON_REQUIREMENTS = "requirements/common.txt"
ROOT = Path(__file__).resolve().parents[1]

DOC_SKELETON = """\
# Attention Backend Feature Support

Generated from the backend classes by prbot's renderer; edit the sources, not this page.

## Backend Priority (CUDA)

### Standard Attention (MHA, MQA, GQA)

**Blackwell (SM 10.x):**

**Ampere/Hopper (SM 8.x-9.x):**

### MLA Attention (DeepSeek-style)

**Blackwell (SM 10.x):**

**Ampere/Hopper (SM 8.x-9.x):**

## Standard Attention (MHA, MQA, GQA) Backends

## MLA (Multi-head Latent Attention) Backends

### Prefill Backends

### Decode Backends
"""

# (enum name, module, class, is MLA, dtypes, head sizes, minimum compute capability)
_BASE_BACKENDS = [
    ("FLASH_ATTN", "flash_attn", "FlashAttentionBackend", False, "fp16bf16", (64, 128, 256), 80),
    ("TRITON_ATTN", "triton_attn", "TritonAttentionBackend", False, "all", (), 70),
    ("FLASHINFER", "flashinfer", "FlashInferBackend", False, "fp16bf16", (64, 128, 256), 75),
    ("FLEX_ATTENTION", "flex_attention", "FlexAttentionBackend", False, "all", (), 70),
    ("TREE_ATTN", "tree_attn", "TreeAttentionBackend", False, "fp16bf16", (64, 128), 80),
    ("ROCM_ATTN", "rocm_attn", "RocmAttentionBackend", False, "fp16bf16", (64, 128), 0),
    ("CPU_ATTN", "cpu_attn", "CPUAttentionBackend", False, "all", (), 0),
    ("TRITON_MLA", "mla.triton_mla", "TritonMLABackend", True, "fp16bf16", (576,), 80),
    ("FLASHMLA", "mla.flashmla", "FlashMLABackend", True, "fp16bf16", (576,), 90),
    ("CUTLASS_MLA", "mla.cutlass_mla", "CutlassMLABackend", True, "fp16bf16", (576,), 100),
    ("FLASHINFER_MLA", "mla.flashinfer_mla", "FlashInferMLABackend", True, "fp16bf16", (576,), 100),
]

_DTYPES = {
    "fp16bf16": "[torch.float16, torch.bfloat16]",
    "all": "[torch.float16, torch.bfloat16, torch.float32]",
}

# The packages of the requirement files and their dependencies, published on the local index.
_COMMON = [f"serving-lib-{i:02d}" for i in range(40)]
_PLATFORM = {
    "cuda": [f"cuda-kernels-{i}" for i in range(8)],
    "rocm": [f"rocm-kernels-{i}" for i in range(6)],
    "cpu": [f"cpu-kernels-{i}" for i in range(5)],
    "xpu": [f"xpu-kernels-{i}" for i in range(4)],
    "tpu": [f"tpu-kernels-{i}" for i in range(4)],
}
_TEST = [f"test-tool-{i:02d}" for i in range(12)]
_DOCS = [f"docs-tool-{i}" for i in range(6)]
_BUILD = ["cmake", "ninja", "packaging", "setuptools-scm", "wheel-tools"]
_VERSIONS = ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "2.0"]


def index_packages() -> dict[str, dict[str, list[str]]]:
    """Every package the requirement files can reach, with dependencies among them (some
    behind platform markers), as ``{name: {version: [requires...]}}``."""
    packages: dict[str, dict[str, list[str]]] = {}
    deps_pool = [f"support-{i:02d}" for i in range(30)]
    for name in deps_pool:
        packages[name] = {version: [] for version in _VERSIONS[:3]}
    everything = _COMMON + sum(_PLATFORM.values(), []) + _TEST + _DOCS + _BUILD
    for position, name in enumerate(everything):
        requires = [f"{deps_pool[(position * 7 + k) % len(deps_pool)]}>=1.0" for k in range(3)]
        if position % 5 == 0:
            requires.append(f'{deps_pool[position % 30]}>=1.1; platform_machine == "aarch64"')
        packages[name] = {version: list(requires) for version in _VERSIONS}
    packages["torch"] = {"2.11.0": [], "2.11.0+cpu": [], "2.11.0+xpu": [], "2.12.0": []}
    packages["torchvision"] = {"0.26.0": ["torch==2.11.0"]}
    return packages


def requirement_files(bound: int = 0) -> dict[str, str]:
    """vLLM's requirements/ shape: per-platform entry files including common.txt, build and
    test sets with constraints, markers per architecture. ``bound`` moves one lower bound in
    common.txt, so a PR changes every platform's effective set."""
    bounded = _VERSIONS[bound % 5]
    common = ["# Common dependencies of every platform"]
    for position, name in enumerate(_COMMON):
        if position == 0:
            common.append(f"{name}>={bounded}")
        elif position % 6 == 0:
            common.append(f'{name}>=1.0; platform_machine == "x86_64"')
        elif position % 7 == 0:
            common.append(f"{name}  # pinned by the serving stack")
        else:
            common.append(f"{name}>=1.{position % 3}")
    files = {COMMON_REQUIREMENTS: "\n".join(common) + "\n"}
    for platform, names in _PLATFORM.items():
        lines = [f"# {platform.upper()} dependencies", "-r common.txt", ""]
        if platform == "cpu":
            lines += [
                'torch==2.11.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"',
                'torch==2.11.0; platform_machine == "ppc64le" or platform_machine == "s390x"',
            ]
        elif platform == "xpu":
            lines.append("torch==2.11.0+xpu")
        else:
            lines += ["torch==2.11.0", "torchvision==0.26.0"]
        lines += [
            f'{name}>=1.0; platform_machine == "x86_64"' if i % 4 == 3 else f"{name}>=1.{i % 2}"
            for i, name in enumerate(names)
        ]
        files[f"requirements/{platform}.txt"] = "\n".join(lines) + "\n"
    build = ["# Should be mirrored in pyproject.toml", *(f"{n}>=1.0" for n in _BUILD)]
    for platform in ("cuda", "rocm", "cpu"):
        torch = "torch==2.11.0+cpu" if platform == "cpu" else "torch==2.11.0"
        files[f"requirements/build/{platform}.txt"] = "\n".join([*build, torch]) + "\n"
    for platform in ("cuda", "rocm", "xpu"):
        tools = [f"{name}>=1.0" for name in _TEST[: 8 if platform == "cuda" else 5]]
        files[f"requirements/test/{platform}.in"] = (
            "\n".join([f"-c ../{platform}.txt", *tools, "torch==2.11.0"]) + "\n"
        )
    files["requirements/docs.in"] = "\n".join(f"{name}>=1.0" for name in _DOCS) + "\n"
    files["requirements/lint.txt"] = "test-tool-00\ntest-tool-01\n"
    return files


def rules_file(index_url: str) -> str:
    """``.github/prbot.yml`` over the built-in vLLM rules: the same matrix, resolved against
    the local index (the built-in per-platform options name the PyTorch indexes)."""
    offline = "{replace: [--index-strategy, unsafe-best-match]}"
    targets = [
        "platforms: {",
        *(f"  {name}: {{uv_options: {offline}}}," for name in _PLATFORM),
        "}",
        "sets: {",
        *(
            f"  {name}: {{uv_options: {offline}}},"
            for name in ("build-cuda", "build-rocm", "build-cpu", "test-cuda", "test-rocm")
        ),
        f"  test-xpu: {{uv_options: {offline}}}",
        "}",
    ]
    body = "\n".join(f"    {line}" for line in targets)
    return (
        "version: 1\n"
        "extends: vllm\n"
        "# Benchmark fixture: every uv run goes to the local index, never the internet.\n"
        "checks:\n"
        "  requirements:\n"
        f"    uv_options: [--index-url, {index_url}]\n"
        f"{body}\n"
    )


def backend_module(name: str, module: str, cls: str, is_mla: bool, dtypes: str, heads, cc) -> str:
    """One attention backend: the class the doc table is read from, and an impl with bulk."""
    base = "MLACommonBackend" if is_mla else "AttentionBackend"
    imports = [
        "from typing import ClassVar",
        "",
        "import torch",
        "",
        "from vllm.v1.attention.backend import AttentionBackend, AttentionImpl",
    ]
    if is_mla:
        imports.append("from vllm.v1.attention.backends.mla.common import MLACommonBackend")
    lines = [*imports, "", "", f"class {cls}({base}):"]
    lines.append(f"    supported_dtypes: ClassVar[list[torch.dtype]] = {_DTYPES[dtypes]}")
    lines.append('    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto", "fp8"]')
    lines += ["", "    @staticmethod", "    def get_name() -> str:", f'        return "{name}"']
    if heads and not is_mla:
        lines += [
            "",
            "    @classmethod",
            "    def get_supported_head_sizes(cls) -> list[int]:",
            f"        return {list(heads)}",
        ]
    if cc:
        lines += [
            "",
            "    @classmethod",
            "    def supports_compute_capability(cls, capability) -> bool:",
            f"        return capability >= DeviceCapability({cc // 10}, {cc % 10})",
        ]
    lines += [
        "",
        "    @staticmethod",
        "    def get_impl_cls():",
        f"        return {cls.removesuffix('Backend')}Impl",
        "",
        "",
        f"class {cls.removesuffix('Backend')}Impl(AttentionImpl):",
        "    def __init__(self, num_heads: int, head_size: int, scale: float) -> None:",
        "        self.num_heads = num_heads",
        "        self.head_size = head_size",
        "        self.scale = scale",
    ]
    for step in range(24):
        lines += [
            "",
            f"    def _stage_{step}(self, query, key, value, out=None):",
            f"        scores = (query @ key.transpose(-1, -2)) * self.scale + {step}",
            "        probs = scores.softmax(dim=-1)",
            "        result = probs @ value",
            "        if out is not None:",
            "            out.copy_(result)",
            "        return result",
        ]
    lines += [
        "",
        "    def forward(self, layer, query, key, value, kv_cache, attn_metadata, output=None):",
        "        result = query",
        *(f"        result = self._stage_{step}(result, key, value)" for step in range(0, 24, 6)),
        "        return result",
    ]
    return "\n".join(lines) + "\n"


def registry_module(backends: list[tuple]) -> str:
    lines = [
        '"""The attention backends, by name: each value is the class that implements it."""',
        "",
        "from enum import Enum",
        "",
        "",
        "class AttentionBackendEnum(Enum):",
    ]
    for name, module, cls, *_ in backends:
        lines.append(f'    {name} = "vllm.v1.attention.backends.{module}.{cls}"')
    lines += [
        '    TORCH_SDPA = ""  # only used for ViT',
        "    CUSTOM = None",
        "",
        "    def get_path(self) -> str:",
        "        return self.value",
    ]
    return "\n".join(lines) + "\n"


def cuda_platform(backends: list[tuple]) -> str:
    """The CUDA priority lists, MLA and not, Blackwell first."""

    def listed(names: list[str], indent: str) -> str:
        body = "".join(f"{indent}    AttentionBackendEnum.{n},\n" for n in names)
        return f"[\n{body}{indent}]"

    mla = [b[0] for b in backends if b[3]]
    std = [b[0] for b in backends if not b[3] and not b[0].startswith(("ROCM", "CPU"))]
    return (
        "from vllm.v1.attention.backends.registry import AttentionBackendEnum\n\n\n"
        "def _get_backend_priorities(use_mla, device_capability):\n"
        "    if use_mla:\n"
        "        if device_capability.major == 10:\n"
        f"            return {listed(mla, '            ')}\n"
        "        else:\n"
        f"            return {listed(list(reversed(mla)), '            ')}\n"
        "    else:\n"
        "        if device_capability.major == 10:\n"
        f"            return {listed(std, '            ')}\n"
        "        else:\n"
        f"            return {listed(list(reversed(std)), '            ')}\n"
    )


def model_module(index: int, rng: random.Random) -> str:
    """A model file of realistic bulk: config reading, a few layers, a forward."""
    layers = rng.randint(3, 8)
    hidden = rng.choice([2048, 4096, 5120, 7168])
    lines = [
        f'"""Model family {index}: a decoder-only transformer."""',
        "",
        "import torch",
        "from torch import nn",
        "",
        "from vllm.model_executor.layers.linear import ColumnParallelLinear, RowParallelLinear",
        "",
    ]
    for layer in range(layers):
        lines += [
            "",
            f"class Block{index}_{layer}(nn.Module):",
            "    def __init__(self, config):",
            "        super().__init__()",
            "        self.hidden_size = config.hidden_size",
            "        self.up = ColumnParallelLinear(config.hidden_size, config.intermediate_size)",
            "        self.down = RowParallelLinear(config.intermediate_size, config.hidden_size)",
            f"        self.norm_eps = getattr(config, 'rms_norm_eps', 1e-{5 + layer % 2})",
            "",
            "    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:",
            "        residual = hidden_states",
            "        hidden_states = self.up(hidden_states)",
            "        hidden_states = torch.nn.functional.silu(hidden_states)",
            "        hidden_states = self.down(hidden_states)",
            "        return hidden_states + residual",
        ]
    lines += [
        "",
        "",
        f"class Model{index}(nn.Module):",
        f"    default_hidden_size = {hidden}",
        "",
        "    def __init__(self, config):",
        "        super().__init__()",
        "        self.blocks = nn.ModuleList(",
        *(f"            Block{index}_{layer}(config)," for layer in range(layers)),
        "        )",
        "",
        "    def forward(self, hidden_states):",
        "        for block in self.blocks:",
        "            hidden_states = block(hidden_states)",
        "        return hidden_states",
    ]
    return "\n".join(lines) + "\n"


def test_module(index: int, subject: str) -> str:
    lines = [
        "import pytest",
        "",
        "",
        f"@pytest.mark.parametrize('batch', [1, 4, {8 + index % 8}])",
        f"def test_{subject}_{index}(batch):",
        f"    assert batch * {index + 1} >= batch",
    ]
    for case in range(6):
        lines += [
            "",
            "",
            f"def test_{subject}_{index}_case_{case}():",
            f"    assert {case} + 1 > 0",
        ]
    return "\n".join(lines) + "\n"


def kernel_source(index: int) -> str:
    body = [
        "#include <cuda_runtime.h>",
        "#include <torch/all.h>",
        "",
        f"__global__ void paged_kernel_{index}(float* out, const float* q,",
        "                                const float* k, int n) {",
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;",
        f"  if (i < n) out[i] = q[i] * k[i] * {index + 1}.0f;",
        "}",
    ]
    return "\n".join(body) + "\n"


@dataclass(frozen=True)
class RepoShape:
    """How big the generated tree is; ``files`` is the rough total."""

    files: int = 3000

    @property
    def models(self) -> int:
        return max(self.files * 45 // 100, 10)

    @property
    def tests(self) -> int:
        return max(self.files * 35 // 100, 10)

    @property
    def kernels(self) -> int:
        return max(self.files // 10, 5)

    @property
    def docs(self) -> int:
        return max(self.files // 20, 5)


def base_tree(shape: RepoShape, index_url: str, seed: int = 0) -> dict[str, str]:
    """The whole repository at its default branch (the attention doc is added by the caller,
    from prbot's own renderer, so it matches the sources)."""
    rng = random.Random(seed)
    files: dict[str, str] = {
        "README.md": "# vLLM-shaped fixture\n\nGenerated for prbot's pipeline benchmark.\n",
        "setup.py": "from setuptools import setup\n\nsetup(name='vllm')\n",
        "pyproject.toml": '[build-system]\nrequires = ["cmake>=3.26", "torch == 2.11.0"]\n',
        ".github/prbot.yml": rules_file(index_url),
        "vllm/__init__.py": '"""A vLLM-shaped package."""\n',
        "vllm/envs.py": "VLLM_ATTENTION_BACKEND = None\n",
        "vllm/v1/attention/backend.py": "class AttentionBackend:\n    pass\n\n\n"
        "class AttentionImpl:\n    pass\n",
        f"{BACKENDS_DIR}/__init__.py": "",
        f"{BACKENDS_DIR}/mla/__init__.py": "",
        f"{BACKENDS_DIR}/mla/common.py": "class MLACommonBackend:\n    @classmethod\n"
        "    def get_supported_head_sizes(cls) -> list[int]:\n        return [576]\n",
        REGISTRY: registry_module(_BASE_BACKENDS),
        "vllm/platforms/cuda.py": cuda_platform(_BASE_BACKENDS),
        "vllm/model_executor/layers/linear.py": "class ColumnParallelLinear:\n    pass\n\n\n"
        "class RowParallelLinear:\n    pass\n",
        "benchmarks/attention_benchmarks/configs/mla_decode.yaml": "backends:\n"
        + "".join(f"  - {b[0]}\n" for b in _BASE_BACKENDS if b[3]),
        "benchmarks/attention_benchmarks/configs/mla_prefill.yaml": "backends: [fa2, fa3]\n",
        "tests/v1/attention/test_mla_backends.py": "BACKENDS = [\n"
        + "".join(f'    "{b[0]}",\n' for b in _BASE_BACKENDS if b[3])
        + "]\n",
        "tests/v1/attention/test_attention_selector.py": "BACKENDS = [\n"
        + "".join(f'    "{b[0]}",\n' for b in _BASE_BACKENDS if not b[3])
        + "]\n",
    }
    for platform in ("rocm", "cpu", "xpu", "tpu"):
        files[f"vllm/platforms/{platform}.py"] = f"DEVICE = {platform!r}\n"
    for backend in _BASE_BACKENDS:
        path = f"{BACKENDS_DIR}/{backend[1].replace('.', '/')}.py"
        files[path] = backend_module(*backend)
    files.update(requirement_files())
    for i in range(shape.models):
        family = f"family_{i % 40:02d}"
        files[f"vllm/model_executor/models/{family}/model_{i}.py"] = model_module(i, rng)
    for i in range(shape.tests):
        area = ("models", "kernels", "v1/core", "entrypoints")[i % 4]
        files[f"tests/{area}/test_{area.replace('/', '_')}_{i}.py"] = test_module(i, "case")
    for i in range(shape.kernels):
        suffix = (".cu", ".cuh", ".cpp", ".h")[i % 4]
        files[f"csrc/attention/kernel_{i}{suffix}"] = kernel_source(i)
    for i in range(shape.docs):
        files[f"docs/models/family_{i}.md"] = f"# Model family {i}\n\nSupported since 0.{i}.\n"
    for i in range(20):
        files[f"benchmarks/kernels/bench_kernel_{i}.py"] = test_module(i, "bench")
    return files


def pr_change(tree: dict[str, str], number: int, variant: int) -> dict[str, str]:
    """One PR's files: a new MLA backend (module, registry entry, CUDA priority), edits to a
    few model files, and a moved lower bound in common.txt, so every check has work and the
    requirements check sees an effective set uv has not resolved before."""
    name = f"BENCH_MLA_{number}"
    module = f"mla.bench_mla_{number}"
    cls = f"BenchMla{number}Backend"
    backend = (name, module, cls, True, "fp16bf16", (576,), 90)
    backends = [*_BASE_BACKENDS, backend]
    files = {
        f"{BACKENDS_DIR}/mla/bench_mla_{number}.py": backend_module(*backend),
        REGISTRY: registry_module(backends),
        "vllm/platforms/cuda.py": cuda_platform(backends),
        COMMON_REQUIREMENTS: requirement_files(bound=variant + 1)[COMMON_REQUIREMENTS],
    }
    models = sorted(path for path in tree if path.startswith("vllm/model_executor/models/"))
    for k in range(6):
        path = models[(number * 13 + k * 101) % len(models)]
        files[path] = tree[path] + f"\n\nREVISION_{number} = {variant}\n"
    return files


def generated_doc(tree: dict[str, str], work: Path) -> str:
    """The attention-backend doc of ``tree``, filled in by ``prbot docs --write`` from the
    skeleton's headings, so the base revision's doc is in sync with its sources."""
    checkout = work / "doc-checkout"
    for path, text in {**tree, DOC: DOC_SKELETON}.items():
        target = checkout / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    # Exit 3 is expected: the vLLM rules' pre-commit hooks name scripts the fixture lacks.
    result = subprocess.run(
        [sys.executable, "-m", "bot", "docs", "--repo", str(checkout), "--write"],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=300,
    )
    if f"rewrote {DOC}" not in result.stderr + result.stdout:
        raise RuntimeError(f"prbot docs --write did not fill {DOC}:\n{result.stderr[-2000:]}")
    return (checkout / DOC).read_text()
