"""Registry enums read with ast: which member lives in which file."""

from bot.jobs.backends import backends_by_file, registered_backends

REGISTRY = '''
from enum import Enum


class AttentionBackendEnum(Enum, metaclass=_Meta):
    """All supported backends."""

    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
    TOKENSPEED_MLA = (
        "vllm.v1.attention.backends.mla.tokenspeed_mla.TokenspeedMLABackend"
    )
    CUSTOM = ""

    def get_class(self):
        return None


class MLAPrefillBackendEnum(Enum):
    TOKENSPEED_MLA = "vllm.v1.attention.backends.mla.prefill.tokenspeed_mla.Prefill"


class Other(Enum):
    X = "a.b.C"
'''


def test_members_map_to_the_files_their_classes_live_in() -> None:
    found, problems = registered_backends(
        REGISTRY, "registry.py", ["AttentionBackendEnum", "MLAPrefillBackendEnum"]
    )
    assert problems == []
    assert [(b.enum, b.name) for b in found] == [
        ("AttentionBackendEnum", "FLASH_ATTN"),
        ("AttentionBackendEnum", "TOKENSPEED_MLA"),
        ("MLAPrefillBackendEnum", "TOKENSPEED_MLA"),
    ]
    assert backends_by_file(found) == {
        "vllm/v1/attention/backends/flash_attn.py": ["FLASH_ATTN"],
        "vllm/v1/attention/backends/mla/tokenspeed_mla.py": ["TOKENSPEED_MLA"],
        "vllm/v1/attention/backends/mla/prefill/tokenspeed_mla.py": ["TOKENSPEED_MLA"],
    }


def test_an_unparsable_registry_is_a_problem() -> None:
    found, problems = registered_backends("class (:", "registry.py", ["AttentionBackendEnum"])
    assert found == [] and problems[0].startswith("`registry.py` does not parse")
