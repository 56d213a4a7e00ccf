"""Real entries of a file: what an integration expectation may match (never a comment)."""

from __future__ import annotations

import pytest

from bot.core.limits import InputRejected
from bot.integration.entries import file_entries

# Shaped like vLLM 0.21's benchmarks/attention_benchmarks/configs/mla_prefill.yaml.
PREFILL_CONFIG = """\
# Compares all available MLA prefill backends:
#   CuTe DSL:     tokenspeed (requires TOKENSPEED_MLA)
description: "MLA prefill backend comparison"
model:
  name: "deepseek-v3"
  num_layers: 60
decode_backends:
  - CUTLASS_MLA
prefill_backends:
  - fa2
  - trtllm   # TRTLLM_RAGGED on Blackwell
"""


def test_yaml_keys_and_values_count_and_comments_do_not():
    entries = file_entries("configs/mla_prefill.yaml", PREFILL_CONFIG)
    assert {"fa2", "trtllm", "CUTLASS_MLA", "prefill_backends", "60"} <= entries
    assert not any("TOKENSPEED_MLA" in entry or "TRTLLM_RAGGED" in entry for entry in entries)


def test_python_names_attributes_and_strings_but_not_comments_or_docstrings():
    source = (
        '"""Backends: TOKENSPEED_MLA is documented here only."""\n'
        "# FLASHMLA in a comment\n"
        "PRIORITY = [AttentionBackendEnum.CUTLASS_MLA]\n"
        "def pick(name='TRITON_MLA'):\n"
        "    '''A docstring naming FLASH_ATTN_MLA.'''\n"
        "    return registry.lookup(backend=name)\n"
    )
    entries = file_entries("vllm/platforms/cuda.py", source)
    assert {"AttentionBackendEnum.CUTLASS_MLA", "TRITON_MLA", "pick", "backend"} <= entries
    for only_in_prose in ("TOKENSPEED_MLA", "FLASHMLA", "FLASH_ATTN_MLA"):
        assert not any(only_in_prose in entry for entry in entries)


def test_other_files_drop_comment_lines():
    entries = file_entries("docs/list.txt", "# FLASHMLA\n  CUTLASS_MLA\n// TRITON_MLA\n\n")
    assert entries == {"CUTLASS_MLA"}


def test_a_billion_laughs_file_is_one_finding_naming_its_line():
    # Every level refers to the one before nine times: refused while composing, before any
    # object is built (bot/core/bounded_yaml.py), as every YAML file a PR brings is.
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(12):
        previous = f"l{i - 1}" if i else "a"
        levels.append(f"l{i}: &l{i} [{', '.join(['*' + previous] * 9)}]")
    with pytest.raises(InputRejected) as rejected:
        file_entries("bomb.yaml", "\n".join(levels) + "\n")
    assert str(rejected.value) == (
        "`bomb.yaml` is not read: YAML that expands to more than 1,000,000 nodes (line 7)"
    )


def test_shared_yaml_nodes_are_read():
    entries = file_entries("ok.yaml", "a: &a [fa2, flashinfer]\nb: *a\nc: {<<: {d: e}}\n")
    assert {"fa2", "flashinfer", "a", "b", "d", "e"} <= set(entries)


@pytest.mark.parametrize(
    "path, text, reason",
    [
        ("configs/bad.yaml", "backends: [fa2\n", "does not parse as YAML"),
        ("vllm/x.py", "def f(:\n", "does not parse (line 1)"),
        ("vllm/deep.py", "x = " + "(" * 5000 + ")" * 5000 + "\n", "parse"),
        ("configs/huge.yaml", "k: v\n" * 500_000, "over the 2.0 MB limit"),
    ],
)
def test_bad_files_are_one_line_findings(path, text, reason):
    with pytest.raises(InputRejected) as rejected:
        file_entries(path, text)
    assert str(rejected.value).startswith(f"`{path}`") and reason in str(rejected.value)
    assert "\n" not in str(rejected.value)
