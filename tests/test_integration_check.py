"""The integration checklist on vLLM-shaped git fixtures (the TOKENSPEED_MLA case, the MLA
prefill benchmark config with the runner's own names, guarded optional imports)."""

from __future__ import annotations

import pytest

from bot.checks import Status, get_check
from bot.core.snapshot import snapshot_from_checkout
from bot.report import rules
from bot.report.render import Report, render_markdown

REGISTRY = "vllm/v1/attention/backends/registry.py"
MLA_TESTS = "tests/v1/attention/test_mla_backends.py"
MLA_CONFIG = "benchmarks/attention_benchmarks/configs/mla_decode.yaml"
BOTH = "[AttentionBackendEnum.FLASHMLA, AttentionBackendEnum.TOKENSPEED_MLA]"
BASE = {
    REGISTRY: (
        "import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
        '    FLASHMLA = "vllm.v1.attention.backends.mla.flashmla.FlashMLABackend"\n'
        '    ROCM_ATTN = "vllm.v1.attention.backends.rocm_attn.RocmAttentionBackend"\n'
    ),
    "vllm/platforms/cuda.py": (
        "def _get_backend_priorities(use_mla):\n    if use_mla:\n"
        "        return [AttentionBackendEnum.FLASHMLA]\n    return []\n"
    ),
    "tests/v1/attention/test_mla_backends.py": "BACKENDS = [AttentionBackendEnum.FLASHMLA]\n",
    "tests/v1/attention/test_attention_backends.py": "BACKENDS = []\n",
    "benchmarks/attention_benchmarks/configs/mla_decode.yaml": "backends:\n  - FLASHMLA\n",
    "requirements/cuda.txt": "-r common.txt\ntorch==2.9.0\n",
    "requirements/common.txt": "numpy\n",
}
NEW_MEMBER = (
    '    TOKENSPEED_MLA = "vllm.v1.attention.backends.mla.tokenspeed_mla.TokenspeedMLABackend"\n'
)
BACKEND_MODULE = (
    "import math\nimport torch\n\nfrom vllm.logger import init_logger\n\n\n"
    "def decode():\n    from tokenspeed_mla import tokenspeed_mla_decode\n"
    "    return tokenspeed_mla_decode\n"
)


def _run(git_repo, head_files, check_context):
    base = git_repo.commit(BASE, "base")
    head = git_repo.commit(head_files, "change")
    snapshot = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/vllm", trusted=True)
    ruleset = rules.load_builtin("vllm")
    section = get_check("integration").run(snapshot, ruleset.checks.integration, check_context)
    return section


def test_new_backend_missing_everywhere_is_listed_item_by_item(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY] + NEW_MEMBER,
            "vllm/v1/attention/backends/mla/tokenspeed_mla.py": BACKEND_MODULE,
        },
        check_context,
    )
    assert section.status == Status.WARN
    missing = {(f["symbol"], f["where"]) for f in section.findings}
    assert missing == {
        ("TOKENSPEED_MLA", "CUDA priority lists"),
        ("TOKENSPEED_MLA", "the MLA backend tests"),
        ("TOKENSPEED_MLA", "the MLA decode benchmark config"),
        ("tokenspeed_mla", "a requirement file"),
    }
    priority = next(f for f in section.findings if f["where"] == "CUDA priority lists")
    assert priority["rule"] == "attention-backend"
    assert priority["missing_in"] == ["vllm/platforms/cuda.py"]
    assert priority["introduced_at"] == f"{REGISTRY}:7"
    dependency = next(f for f in section.findings if f["symbol"] == "tokenspeed_mla")
    assert dependency["distribution"] == "tokenspeed-mla"
    # torch is declared and math is the standard library: neither is reported.
    assert {f["symbol"] for f in section.findings} == {"TOKENSPEED_MLA", "tokenspeed_mla"}
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "- `TOKENSPEED_MLA`, introduced at " in text and "  - CUDA priority lists" in text


def test_fully_wired_backend_passes(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY] + NEW_MEMBER,
            "vllm/v1/attention/backends/mla/tokenspeed_mla.py": BACKEND_MODULE,
            "vllm/platforms/cuda.py": BASE["vllm/platforms/cuda.py"].replace(
                "[AttentionBackendEnum.FLASHMLA]",
                "[AttentionBackendEnum.FLASHMLA, AttentionBackendEnum.TOKENSPEED_MLA]",
            ),
            MLA_TESTS: f"BACKENDS = {BOTH}\n",
            MLA_CONFIG: "backends:\n  - FLASHMLA\n  - TOKENSPEED_MLA\n",
            "requirements/cuda.txt": BASE["requirements/cuda.txt"] + "tokenspeed_mla==0.1.2\n",
        },
        check_context,
    )
    assert section.status == Status.PASS, section.findings
    assert section.summary.endswith("all wired in")


def test_expectations_follow_the_kind_of_backend(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY]
            + '    ROCM_NEW = "vllm.v1.attention.backends.rocm_new.Backend"\n'
            + '    FAST_ATTN = "vllm.v1.attention.backends.fast.Backend"\n',
        },
        check_context,
    )
    missing = {(f["symbol"], f["where"]) for f in section.findings}
    # A ROCm backend owes nothing to the CUDA lists; a non-MLA one no MLA config.
    assert ("ROCM_NEW", "CUDA priority lists") not in missing
    assert ("FAST_ATTN", "CUDA priority lists") in missing
    assert ("FAST_ATTN", "a test") in missing
    assert not any(where.startswith("the MLA") for _, where in missing)


def test_moved_member_is_not_new(git_repo, check_context):
    reordered = (
        BASE[REGISTRY].replace(
            '    FLASHMLA = "vllm.v1.attention.backends.mla.flashmla.FlashMLABackend"\n', ""
        )
        + '    FLASHMLA = "vllm.v1.attention.backends.mla.flashmla.FlashMLABackend"\n'
    )
    section = _run(git_repo, {REGISTRY: reordered}, check_context)
    assert section.status == Status.PASS and section.findings == []
    assert section.summary == "nothing new to wire in"


def test_untouched_paths_skip(git_repo, check_context):
    section = _run(git_repo, {"README.md": "hello\n"}, check_context)
    assert section.status == Status.SKIP


@pytest.mark.parametrize(
    "bad, message",
    [
        ("added: '([A-Z'\n", "invalid regular expression"),
        ("added: '[A-Z]+'\n", "must capture"),
    ],
)
def test_bad_rules_name_file_line_and_field(bad, message):
    text = (
        "checks:\n  integration:\n    rules:\n      - name: x\n        paths: [a.py]\n"
        "        expect: [{where: w, paths: [b.py]}]\n        " + bad
    )
    with pytest.raises(rules.RulesError) as err:
        rules.load_text(text, ".github/prbot.yml")
    assert str(err.value).startswith(".github/prbot.yml:7: checks.integration.rules.0.added")
    assert message in str(err.value)


def test_imports_rule_maps_and_ignores_module_names(git_repo, check_context):
    text = (
        "checks:\n  integration:\n    rules:\n      - name: deps\n        kind: imports\n"
        "        paths: ['vllm/**/*.py']\n        first_party: [vllm]\n"
        "        distributions: {zmq: pyzmq}\n        ignore: [_typeshed]\n"
        "        expect: [{where: a requirement file, paths: ['requirements/*.txt']}]\n"
    )
    ruleset = rules.load_text(text, ".github/prbot.yml")
    base = git_repo.commit({"requirements/common.txt": "pyzmq>=25\n", "vllm/a.py": ""}, "base")
    head = git_repo.commit(
        {
            "vllm/a.py": "import zmq\nfrom _typeshed import Incomplete\n"
            "import aiter\nfrom vllm.x import y\n"
        },
        "imports",
    )
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    section = get_check("integration").run(snapshot, ruleset.checks.integration, check_context)
    assert [f["symbol"] for f in section.findings] == ["aiter"]
    assert section.findings[0]["missing_in"] == ["requirements/common.txt"]


# --- the MLA prefill benchmark config names backends its own way (vLLM 0.21) -------------

PREFILL_REGISTRY = "vllm/v1/attention/backends/mla/prefill/registry.py"
PREFILL_CONFIG = "benchmarks/attention_benchmarks/configs/mla_prefill.yaml"
RUNNER = "benchmarks/attention_benchmarks/mla_runner.py"
PREFILL_BASE = {
    PREFILL_REGISTRY: (
        "class MLAPrefillBackendEnum(Enum):\n"
        '    FLASHINFER = "vllm.v1.attention.backends.mla.prefill.fi.FlashInferPrefillBackend"\n'
    ),
    "tests/v1/attention/test_mla_prefill_selector.py": "X = MLAPrefillBackendEnum.FLASHINFER\n",
    PREFILL_CONFIG: "prefill_backends:\n  - flashinfer\n",
}
PREFILL_MEMBERS = (
    "    FLASH_ATTN = (\n"
    '        "vllm.v1.attention.backends.mla.prefill.flash_attn.FlashAttnPrefillBackend"\n'
    "    )\n"
    "    TRTLLM_RAGGED = (\n"
    '        "vllm.v1.attention.backends.mla.prefill.trtllm_ragged."\n'
    '        "TrtllmRaggedPrefillBackend"\n'
    "    )\n"
    '    TOKENSPEED_MLA = "vllm.v1.attention.backends.mla.prefill.ts.TokenspeedPrefillBackend"\n'
)
PREFILL_HEAD = {
    PREFILL_REGISTRY: PREFILL_BASE[PREFILL_REGISTRY] + PREFILL_MEMBERS,
    "tests/v1/attention/test_mla_prefill_selector.py": (
        "X = [MLAPrefillBackendEnum.FLASHINFER, MLAPrefillBackendEnum.FLASH_ATTN,\n"
        "     MLAPrefillBackendEnum.TRTLLM_RAGGED, MLAPrefillBackendEnum.TOKENSPEED_MLA]\n"
    ),
    # tokenspeed is only in a comment: the config does not run it.
    PREFILL_CONFIG: (
        "# Non-FA: flashinfer, trtllm; CuTe DSL: tokenspeed (TOKENSPEED_MLA)\n"
        "prefill_backends:\n  - fa2\n  - fa3\n  - flashinfer\n  - trtllm\n"
    ),
    RUNNER: (
        "_PREFILL_BACKEND_CONFIG = {\n"
        '    "fa2": {"flash_attn_version": 2},\n'
        '    "trtllm": {"mla_prefill_backend_enum": "TRTLLM_RAGGED"},\n'
        '    "tokenspeed": {"mla_prefill_backend_enum": "TOKENSPEED_MLA"},\n'
        "}\n\n\ndef check(name):\n"
        '    return {"fa2": "FlashAttnPrefillBackend", "fa3": "FlashAttnPrefillBackend"}[name]\n'
    ),
}


def test_benchmark_config_matches_through_the_runners_own_names(git_repo, check_context):
    base = git_repo.commit(PREFILL_BASE, "base")
    head = git_repo.commit(PREFILL_HEAD, "prefill backends")
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    ruleset = rules.load_builtin("vllm")
    section = get_check("integration").run(snapshot, ruleset.checks.integration, check_context)
    # fa2/fa3 map to FlashAttnPrefillBackend (FLASH_ATTN's class), trtllm to TRTLLM_RAGGED;
    # tokenspeed is mapped too, but the config names it only in a comment.
    assert [(f["symbol"], f["where"]) for f in section.findings] == [
        ("TOKENSPEED_MLA", "the MLA prefill benchmark config")
    ]
    assert section.findings[0]["aliases"] == ["tokenspeed"]
    assert section.findings[0]["missing_in"] == [PREFILL_CONFIG]
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "- `TOKENSPEED_MLA` (or `tokenspeed`), introduced at " in text


def test_rules_can_give_aliases_where_no_runner_maps_them(git_repo, check_context):
    text = (
        "checks:\n  integration:\n    rules:\n      - name: prefill\n"
        f"        paths: [{PREFILL_REGISTRY}]\n"
        "        added: '^\\s+([A-Z][A-Z0-9_]*)\\s*='\n"
        "        expect:\n          - where: the config\n"
        f"            paths: [{PREFILL_CONFIG}]\n"
        "            pattern: '(?i)^{symbol}$'\n"
        "            aliases: {TRTLLM_RAGGED: [trtllm], FLASH_ATTN: [fa2, fa3]}\n"
    )
    ruleset = rules.load_text(text, ".github/prbot.yml")
    base = git_repo.commit(PREFILL_BASE, "base")
    head_files = dict(PREFILL_HEAD)
    del head_files[RUNNER]
    head = git_repo.commit(head_files, "prefill backends")
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    section = get_check("integration").run(snapshot, ruleset.checks.integration, check_context)
    assert [f["symbol"] for f in section.findings] == ["TOKENSPEED_MLA"]


def test_a_member_a_base_comment_mentions_is_still_new(git_repo, check_context):
    base_files = dict(BASE)
    base_files[REGISTRY] = BASE[REGISTRY] + "    # TOKENSPEED_MLA: coming with tokenspeed_mla 0.2\n"
    base = git_repo.commit(base_files, "base")
    head = git_repo.commit({REGISTRY: BASE[REGISTRY] + NEW_MEMBER}, "add it")
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    section = get_check("integration").run(
        snapshot, rules.load_builtin("vllm").checks.integration, check_context
    )
    assert {f["symbol"] for f in section.findings} == {"TOKENSPEED_MLA"}


def test_a_backend_another_platform_selects_owes_nothing_to_cuda(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY] + '    ULTRAQUANT = "vllm.v1.attention.backends.uq.Backend"\n',
            "vllm/platforms/rocm.py": "PRIORITY = [AttentionBackendEnum.ULTRAQUANT]\n",
        },
        check_context,
    )
    assert section.status == Status.PASS, section.findings
    assert ("ULTRAQUANT", "CUDA priority lists", "vllm/platforms/rocm.py") in section.data[
        "wired_elsewhere"
    ]


# --- imports: new only when no file at base imports them; guarded ones are optional --------


def test_imports_known_at_base_or_declared_under_another_name_are_not_reported(
    git_repo, check_context
):
    base_files = dict(BASE)
    base_files["vllm/rocm_ops.py"] = "def f():\n    import aiter\n    return aiter\n"
    base_files["requirements/cuda.txt"] = (
        "-r common.txt\nnvidia-cutlass-dsl==4.4.2\nquack-kernels>=0.3.3\n"
    )
    base = git_repo.commit(base_files, "base")
    head = git_repo.commit(
        {
            "vllm/cutedsl.py": (
                "import cutlass\nimport cutlass.cute as cute\n"
                "from quack.compile_utils import make_fake_tensor\n"
                "from aiter import dtypes\nimport brand_new_kernels\n"
            )
        },
        "kernels",
    )
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    ruleset = rules.load_builtin("vllm")
    section = get_check("integration").run(snapshot, ruleset.checks.integration, check_context)
    assert [(f["symbol"], f["introduced_at"]) for f in section.findings] == [
        ("brand_new_kernels", "vllm/cutedsl.py:5")
    ]
    # The base walk is remembered per base commit, found or not.
    cache = check_context.cache
    assert cache.get("integration-base-imports", f"{base}:brand_new_kernels") == "0"
    assert cache.get("integration-base-imports", f"{base}:aiter") == "1"


GUARDED_MODULE = """\
import torch

try:
    from torchcodec.decoders import AudioDecoder

    _HAS_TORCHCODEC = True
except ImportError:
    AudioDecoder = None
    _HAS_TORCHCODEC = False
"""


def test_a_guarded_import_is_an_optional_dependency_and_says_so(git_repo, check_context):
    section = _run(git_repo, {"vllm/processors/omni.py": GUARDED_MODULE}, check_context)
    assert section.status == Status.PASS
    (finding,) = section.findings
    assert finding["symbol"] == "torchcodec" and finding["optional"] is True
    assert finding["guard"] == "try/except ImportError"
    assert finding["where"] == "a requirement file (optional: guarded by try/except ImportError)"
    assert finding["missing_in"] == []
    assert "optional imports not declared: torchcodec" in section.summary
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "Optional imports (the code runs without them)" in text and "`torchcodec` at" in text


def test_a_guarded_and_an_unguarded_import_of_one_module_is_required(git_repo, check_context):
    section = _run(
        git_repo,
        {
            "vllm/processors/omni.py": GUARDED_MODULE,
            "vllm/processors/other.py": "from torchcodec import encoders\n",
        },
        check_context,
    )
    assert section.status == Status.WARN
    (finding,) = section.findings
    assert "optional" not in finding and finding["introduced_at"] == "vllm/processors/other.py:1"


# --- hostile input: a finding, never a traceback -------------------------------------------


def test_files_that_do_not_parse_are_reported_not_raised(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY] + NEW_MEMBER,
            "vllm/broken.py": "import tokenspeed_mla\ndef f(:\n",
            "vllm/deep.py": "import deep_dep\nx = " + "[" * 3000 + "]" * 3000 + "\n",
            MLA_CONFIG: "backends: [FLASHMLA, TOKENSPEED_MLA\n",
        },
        check_context,
    )
    assert section.status == Status.WARN
    problems = section.data["problems"]
    assert any(p.startswith("`vllm/broken.py` does not parse") for p in problems)
    assert any(p.startswith("`vllm/deep.py`") for p in problems)
    assert any(p.startswith(f"`{MLA_CONFIG}` does not parse as YAML") for p in problems)
    # An unreadable config is not a gap: nothing is claimed about it.
    assert ("TOKENSPEED_MLA", "the MLA decode benchmark config") not in {
        (f["symbol"], f["where"]) for f in section.findings
    }
    assert section.summary.endswith("3 input problems (not read in full)")
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "Input problems (nothing is claimed" in text


def test_summary_stays_short_with_many_new_names(git_repo, check_context):
    members = "".join(f'    NEW_{i} = "vllm.v1.attention.backends.n{i}.B"\n' for i in range(40))
    section = _run(git_repo, {REGISTRY: BASE[REGISTRY] + members}, check_context)
    assert section.summary.count("not yet in") == 3 and section.summary.endswith("and 37 more")
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "more in the JSON report" in text


def test_a_flood_of_new_names_is_bounded(git_repo, check_context):
    members = "".join(f'    NEW_{i} = "vllm.v1.attention.backends.n{i}.B"\n' for i in range(150))
    section = _run(git_repo, {REGISTRY: BASE[REGISTRY] + members}, check_context)
    assert len({f["symbol"] for f in section.findings}) == 100
    assert section.data["problems"] == [
        "150 new names for rule `attention-backend`: the first 100 were checked"
    ]
