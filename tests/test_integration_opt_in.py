"""What the releases showed: opt-in backends (HPC_ATTN, B12X), libraries installed by a
Dockerfile or CI script (nixl, kvcr), probed for by the code (hpc), or coming with a platform
stack the base already uses (flydsl beside aiter). Each is a note or a declaration, never a
"missing" item; the TOKENSPEED_MLA case stays a gap (tests/test_integration_check.py)."""

from __future__ import annotations

from bot.checks import Status, get_check
from bot.core.snapshot import snapshot_from_checkout
from bot.integration.config import OptIn
from bot.integration.distributions import declared_distributions
from bot.integration.opt_in import opt_in_reason
from bot.integration.symbols import NewSymbol
from bot.report import rules
from bot.report.render import Report, render_markdown

REGISTRY = "vllm/v1/attention/backends/registry.py"
BASE = {
    REGISTRY: (
        "import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
        '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
    ),
    "vllm/platforms/cuda.py": "PRIORITIES = [AttentionBackendEnum.FLASH_ATTN]\n",
    "tests/v1/attention/test_attention_backends.py": "BACKENDS = ['FLASH_ATTN']\n",
    "requirements/cuda.txt": "torch==2.9.0\nflashinfer-python==0.6.8\n",
    "requirements/kv_connectors.txt": "nixl >= 0.7.1\n",
    "setup.py": 'setup(extras_require={"b12x": ["b12x==1.3.0"]})\n',
    "vllm/rocm_ops.py": "import aiter\n",
}
# Shaped like vLLM 0.25's hpc_attn.py: the package is imported inside methods, and the
# implementation refuses to start without it.
HPC_BACKEND = """\
import importlib.util


class HpcAttentionBackend:
    @staticmethod
    def get_name():
        return "HPC_ATTN"


class HpcAttentionImpl:
    def __init__(self):
        if importlib.util.find_spec("hpc") is None:
            raise ImportError("HPC attention requires the hpc module to be installed.")

    def forward(self):
        import hpc

        return hpc.attention()
"""
# Shaped like vLLM 0.30's b12x.py and vllm/utils/b12x.py (the accessor one hop away).
B12X_UTILS = """\
import importlib
import importlib.util

_HAS_B12X = importlib.util.find_spec("b12x") is not None


def get_b12x_paged_attention():
    return importlib.import_module("b12x.attention.paged") if _HAS_B12X else None
"""
B12X_BACKEND = """\
from vllm.utils.b12x import get_b12x_paged_attention


class B12xPagedAttentionBackend:
    @classmethod
    def supports_combination(cls):
        if get_b12x_paged_attention() is None:
            return "Install the b12x backend with `pip install vllm[b12x]`"
        return None
"""
# A backend that probes for a package the CUDA requirements install by default.
FLASHINFER_BACKEND = """\
import importlib.util

HAS_FLASHINFER = importlib.util.find_spec("flashinfer") is not None
"""


def _run(git_repo, head_files, check_context):
    base = git_repo.commit(BASE, "base")
    head = git_repo.commit(head_files, "change")
    snapshot = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/vllm", trusted=True)
    ruleset = rules.load_builtin("vllm")
    return get_check("integration").run(snapshot, ruleset.checks.integration, check_context)


def _member(name: str, target: str) -> str:
    return f'    {name} = "{target}"\n'


def test_a_backend_needing_an_undeclared_probed_package_is_opt_in(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY]
            + _member("HPC_ATTN", "vllm.v1.attention.backends.hpc_attn.HpcAttentionBackend"),
            "vllm/v1/attention/backends/hpc_attn.py": HPC_BACKEND,
        },
        check_context,
    )
    assert section.status == Status.PASS, section.findings
    notes = {(f["symbol"], f["where"]): f for f in section.findings}
    assert set(notes) == {
        ("HPC_ATTN", "CUDA priority lists"),
        ("HPC_ATTN", "a test"),
        ("hpc", "a requirement file (optional: the code probes for it at "
         "`vllm/v1/attention/backends/hpc_attn.py:12`)"),
    }  # fmt: skip
    priority = notes[("HPC_ATTN", "CUDA priority lists")]
    assert priority["optional"] is True
    assert priority["opt_in"] == (
        "opt-in: needs `hpc` (probed for at `vllm/v1/attention/backends/hpc_attn.py:12`), "
        "which the requirement files declare nowhere"
    )
    assert "opt-in, left out of automatic selection: HPC_ATTN" in section.summary
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "Opt-in, so not expected where automatic selection looks" in text
    assert "| `HPC_ATTN` |" not in text  # not in the table of missing items


def test_a_backend_needing_an_extra_is_opt_in_through_its_accessor(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY]
            + _member("B12X", "vllm.v1.attention.backends.b12x.B12xPagedAttentionBackend"),
            "vllm/v1/attention/backends/b12x.py": B12X_BACKEND,
            "vllm/utils/b12x.py": B12X_UTILS,
            "tests/v1/attention/test_b12x.py": "BACKEND = 'B12X'\n",
        },
        check_context,
    )
    assert section.status == Status.PASS, section.findings
    (note,) = section.findings
    assert (note["symbol"], note["where"]) == ("B12X", "CUDA priority lists")
    assert note["opt_in"] == (
        "opt-in: needs `b12x` (probed for at `vllm/utils/b12x.py:4`), which the requirement "
        "files declare only as an optional extra (`b12x`)"
    )


def test_a_backend_probing_a_default_dependency_still_owes_the_cuda_lists(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY]
            + _member("FLASHINFER_NEW", "vllm.v1.attention.backends.fi_new.Backend"),
            "vllm/v1/attention/backends/fi_new.py": FLASHINFER_BACKEND,
        },
        check_context,
    )
    assert section.status == Status.WARN
    assert {(f["symbol"], f["where"]) for f in section.findings} == {
        ("FLASHINFER_NEW", "CUDA priority lists"),
        ("FLASHINFER_NEW", "a test"),
    }
    assert all(not f.get("optional") for f in section.findings)


def test_a_library_a_dockerfile_or_ci_script_installs_is_declared_there(git_repo, check_context):
    section = _run(
        git_repo,
        {
            "vllm/kv_offload/kvcr_manager.py": (
                "from kvcr import Tier\nimport nixl_ep\nimport deep_gemm\n"
            ),
            ".buildkite/scripts/install-kv-offload.sh": (
                "#!/bin/bash\nuv pip install --system \\\n"
                '    "kvcr @ git+https://github.com/ai-dynamo/kvcr.git@v0.1.0"\n'
            ),
            "docker/Dockerfile": (
                "FROM base\nRUN --mount=type=cache,target=/root/.cache/uv \\\n"
                "    # DeepGEMM from its wheel\n"
                "    uv pip install --system deep-gemm==2.1.0 && \\\n"
                "    uv pip install --system nixl-cu${CUDA_MAJOR}\n"
            ),
        },
        check_context,
    )
    assert section.status == Status.PASS, section.findings
    assert section.findings == []
    # nixl_ep ships in the nixl wheels (the rule's mapping), declared in kv_connectors.txt;
    # kvcr and deep_gemm are declared by what installs them, which the report names.
    assert sorted(section.data["installed_by"]) == [
        ("deep_gemm", "deep-gemm", "docker/Dockerfile:4"),
        ("kvcr", "kvcr", ".buildkite/scripts/install-kv-offload.sh:3"),
    ]
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "Installed outside the requirement files: `kvcr`" in text


def test_a_library_imported_beside_an_undeclared_platform_library_comes_with_it(
    git_repo, check_context
):
    section = _run(
        git_repo,
        {
            "vllm/fused_moe/fused_flydsl_moe.py": (
                "import flydsl.compiler as flyc\nimport torch\n"
                "from aiter.fused_moe import moe_sorting\n"
            ),
            "vllm/other.py": "def f():\n    import aiter\n    import lazy_new_lib\n",
        },
        check_context,
    )
    by_symbol = {f["symbol"]: f for f in section.findings}
    assert by_symbol["flydsl"]["optional"] is True
    assert "its file needs `aiter` to load" in by_symbol["flydsl"]["where"]
    # Only a top-level neighbour counts: a file that loads without aiter proves nothing.
    assert "optional" not in by_symbol["lazy_new_lib"]
    assert section.status == Status.WARN


def test_only_a_third_party_package_the_default_install_lacks_makes_a_member_opt_in():
    files = {
        "vllm/b/own.py": 'import importlib.util\nA = importlib.util.find_spec("vllm._C")\n'
        'B = importlib.util.find_spec("json")\nC = importlib.util.find_spec("flashinfer")\n',
        "vllm/b/hpc.py": 'import importlib.util\nA = importlib.util.find_spec("hpc")\n',
        # Shaped like vllm/_aiter_ops.py and vllm/utils/flashinfer.py: helpers probing for
        # a fast path (aiter on ROCm, prebuilt cubins) that TRITON_ATTN and FLASHINFER,
        # both in the CUDA lists, use when present.
        "vllm/_aiter_ops.py": "import importlib.util\n\n\ndef is_enabled():\n"
        '    return importlib.util.find_spec("aiter") is not None\n',
        "vllm/utils/fi.py": "import importlib.util\n\n\ndef has_cubin():\n"
        '    return importlib.util.find_spec("flashinfer_cubin") is not None\n\n\n'
        "def has_flashinfer():\n"
        '    return importlib.util.find_spec("flashinfer") is not None or has_cubin()\n',
        "vllm/b/triton.py": "from vllm._aiter_ops import is_enabled\n",
        "vllm/b/fi.py": "from vllm.utils.fi import has_flashinfer\n",
    }
    rule = OptIn(requirements=["requirements/*.txt"], first_party=["vllm"])
    declared = declared_distributions(
        [
            ("requirements/cuda.txt", "flashinfer-python\n"),
            # An extra named like the package, empty: not a declaration of `flashinfer`.
            ("setup.py", 'setup(extras_require={"flashinfer": []})\n'),
        ]
    )

    def reason(target):
        item = NewSymbol("X", "registry.py", 1, target)
        return opt_in_reason(item, rule, declared, files.get, files.__contains__, [])

    assert reason("vllm.b.own.Backend") is None  # first party, stdlib, a default dependency
    assert reason("vllm.b.hpc.Backend").startswith("opt-in: needs `hpc`")
    assert reason("vllm.b.nowhere.Backend") is None  # no such module: nothing to read
    assert reason("vllm.b.triton.Backend") is None  # a helper's probe, undeclared: not enough
    assert reason("vllm.b.fi.Backend") is None  # flashinfer-python is a default dependency
    assert reason(None) is None


def test_the_head_probe_search_is_remembered_per_head_commit(git_repo, check_context):
    section = _run(
        git_repo,
        {
            "vllm/hpc_ops.py": "def f():\n    import hpc\n",
            "vllm/utils/hpc.py": 'import importlib.util\nOK = importlib.util.find_spec("hpc")\n',
            "vllm/plain.py": "import plain_new\n",
        },
        check_context,
    )
    assert {f["symbol"]: bool(f.get("optional")) for f in section.findings} == {
        "hpc": True,
        "plain_new": False,
    }
    cache = check_context.cache
    head = git_repo.git("rev-parse", "HEAD")
    assert cache.get("integration-head-probes", f"{head}:hpc") == "vllm/utils/hpc.py:2"
    assert cache.get("integration-head-probes", f"{head}:plain_new") == "-"


def test_files_over_the_readers_bound_are_problems_not_a_lost_section(git_repo, check_context):
    huge = "x = 1\n" + "#" * 8_100_000
    section = _run(
        git_repo,
        {
            "vllm/new.py": "import brand_new\n",
            "vllm/huge.py": huge,  # its diff is not read
            "docker/Dockerfile": "RUN pip install a\n" + huge,  # an install script too big
        },
        check_context,
    )
    assert [f["symbol"] for f in section.findings] == ["brand_new"]
    problems = section.data["problems"]
    assert any(p.startswith("`vllm/huge.py`") for p in problems)
    assert any(p.startswith("`docker/Dockerfile`") for p in problems)
    assert section.summary.endswith("input problems (not read in full)")


# Shaped like vLLM 0.33's vllm/distributed/weight_transfer/m2n_common.py.
M2N_COMMON = """\
def prepare_m2n_local_runtime(m2n):
    import nccl.core as nccl

    return nccl


def import_m2n():
    try:
        import nccl.m2n as m2n
    except ImportError as e:
        raise ImportError("requires the nccl-extensions package") from e
    return m2n
"""


def test_a_bare_import_beside_a_guarded_one_in_the_same_file_is_optional(git_repo, check_context):
    section = _run(
        git_repo,
        {
            "vllm/distributed/weight_transfer/m2n_common.py": M2N_COMMON,
            "vllm/elsewhere.py": "import humming_like\n",
            "vllm/guarded.py": "try:\n    import humming_like\nexcept ImportError:\n    pass\n",
        },
        check_context,
    )
    by_symbol = {f["symbol"]: f for f in section.findings}
    assert by_symbol["nccl"]["where"] == (
        "a requirement file (optional: the same file guards it at line 9 (try/except ImportError))"
    )
    # A guard in another file does not make a bare import optional (humming, 0.20).
    assert "optional" not in by_symbol["humming_like"]
    assert section.status == Status.WARN
