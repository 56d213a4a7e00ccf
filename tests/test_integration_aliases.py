"""Names a benchmark runner's own tables give registry members (fa2 -> FLASH_ATTN)."""

from __future__ import annotations

import pytest

from bot.core.limits import InputRejected
from bot.integration.aliases import aliases_in_source

# Shaped like vLLM 0.21's benchmarks/attention_benchmarks/mla_runner.py: one table of
# settings per config name, and one of expected classes.
RUNNER = '''\
_PREFILL_BACKEND_CONFIG: dict[str, dict] = {
    "fa2": {"flash_attn_version": 2, "use_trtllm_ragged_deepseek_prefill": False},
    "fa3": {"flash_attn_version": 3},
    "trtllm": {"mla_prefill_backend_enum": "TRTLLM_RAGGED"},
    "tokenspeed": {"mla_prefill_backend_enum": MLAPrefillBackendEnum.TOKENSPEED_MLA},
}


def check(prefill_backend):
    """fa4 would be "FlashAttnPrefillBackend" too."""
    expected_class = {
        "fa2": "FlashAttnPrefillBackend",
        "fa3": "FlashAttnPrefillBackend",
        "trtllm": "TrtllmRaggedPrefillBackend",
    }.get(prefill_backend)
    # "fa5": "FlashAttnPrefillBackend" in a comment names nothing
    return {1: "FlashAttnPrefillBackend"}, expected_class
'''

TARGETS = {
    "FLASH_ATTN": {"FLASH_ATTN", "FlashAttnPrefillBackend"},
    "TRTLLM_RAGGED": {"TRTLLM_RAGGED", "TrtllmRaggedPrefillBackend"},
    "TOKENSPEED_MLA": {"TOKENSPEED_MLA", "TokenspeedMLAPrefillBackend"},
    "CUDNN": {"CUDNN", "CudnnPrefillBackend"},
}


def test_keys_whose_values_name_the_member_or_its_class_are_aliases():
    found = aliases_in_source("benchmarks/mla_runner.py", RUNNER, TARGETS)
    assert found["FLASH_ATTN"] == {"fa2", "fa3"}  # by class name only
    assert found["TRTLLM_RAGGED"] == {"trtllm"}  # by member name and by class
    assert found["TOKENSPEED_MLA"] == {"tokenspeed"}  # an attribute, not a string
    assert found["CUDNN"] == set()


def test_settings_inside_a_table_entry_are_not_aliases():
    found = aliases_in_source("r.py", RUNNER, TARGETS)
    assert "mla_prefill_backend_enum" not in found["TRTLLM_RAGGED"]


def test_an_unparsable_runner_is_a_finding():
    with pytest.raises(InputRejected, match="does not parse"):
        aliases_in_source("r.py", "TABLE = {\n", TARGETS)
