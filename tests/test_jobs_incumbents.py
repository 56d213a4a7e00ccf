"""What a backend new in the PR is benchmarked against: the platform's priority list."""

from __future__ import annotations

from bot.jobs.incumbents import incumbents, priority_list

CUDA = """
def _get_backend_priorities(use_mla, device_capability, num_heads=None):
    if use_mla:
        if device_capability.major == 10:
            sparse = [AttentionBackendEnum.FLASHMLA_SPARSE]
            return [
                AttentionBackendEnum.FLASHINFER_MLA,
                AttentionBackendEnum.FAST_MLA,
                AttentionBackendEnum.CUTLASS_MLA,
                *sparse,
            ]
        else:
            return [AttentionBackendEnum.FLASH_ATTN_MLA, AttentionBackendEnum.TRITON_MLA]
    if device_capability.major == 10:
        return [AttentionBackendEnum.FLASHINFER, AttentionBackendEnum.FLASH_ATTN]
    return [AttentionBackendEnum.FLASH_ATTN]
"""


def _order(major: int, flag: str = "use_mla") -> list[str] | None:
    return priority_list(
        CUDA,
        "vllm/platforms/cuda.py",
        function="_get_backend_priorities",
        flag=flag,
        major=major,
        enum="AttentionBackendEnum",
    )


def test_the_mla_list_for_a_capability_in_order_without_splats():
    assert _order(10) == ["FLASHINFER_MLA", "FAST_MLA", "CUTLASS_MLA"]
    assert _order(9) is None  # the else branch names no capability


def test_incumbents_are_what_the_list_puts_ahead_of_the_new_backend():
    assert incumbents(["FLASHINFER_MLA", "FAST_MLA", "CUTLASS_MLA"], ["FAST_MLA"]) == [
        "FLASHINFER_MLA"
    ]
    # First in the list, or not in it: the two the platform picks after it.
    assert incumbents(["FAST_MLA", "A", "B", "C"], ["FAST_MLA"]) == ["A", "B"]
    assert incumbents(["A", "B", "C"], ["NEW"]) == ["A", "B"]


def test_a_file_that_does_not_parse_or_lacks_the_function_gives_none():
    for source in ("def broken(:\n", "x = 1\n"):
        assert (
            priority_list(
                source,
                "p.py",
                function="_get_backend_priorities",
                flag="use_mla",
                major=10,
                enum="AttentionBackendEnum",
            )
            is None
        )
