"""The integration checklist on a vLLM-shaped git fixture (the TOKENSPEED_MLA case)."""

from __future__ import annotations

import pytest

from bot import rules
from bot.checks import Status, get_check
from bot.report import Report, render_markdown
from bot.snapshot import snapshot_from_checkout

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
    snapshot = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/vllm")
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
    assert "| `TOKENSPEED_MLA` |" in text and "CUDA priority lists" in text


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
    assert ("FAST_ATTN", "the attention backend tests") in missing
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
    snapshot = snapshot_from_checkout(git_repo.path, base, head)
    section = get_check("integration").run(snapshot, ruleset.checks.integration, check_context)
    assert [f["symbol"] for f in section.findings] == ["aiter"]
    assert section.findings[0]["missing_in"] == ["requirements/common.txt"]
