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


def test_the_mla_list_for_a_capability_in_order_with_its_splat_resolved():
    assert _order(10) == ["FLASHINFER_MLA", "FAST_MLA", "CUTLASS_MLA", "FLASHMLA_SPARSE"]
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


# Shaped like vLLM 0.33.0's SM100 MLA branch: the sparse backends come from a local list that
# three if-branches assign (by KV-cache dtype and head count), splatted at the end.
SPLATTED = """
def _get_backend_priorities(use_mla, device_capability, num_heads=None, dtype=None):
    if use_mla:
        if device_capability.major == 10:
            if dtype is not None:
                sparse_backends = [Enum.INFER_SPARSE, Enum.MLA_SPARSE]
            else:
                if num_heads is not None and num_heads <= 16:
                    sparse_backends = [Enum.NEW_SPARSE, Enum.INFER_SPARSE, Enum.MLA_SPARSE]
                else:
                    sparse_backends = [Enum.MLA_SPARSE, Enum.INFER_SPARSE]
            return [Enum.INFER_MLA, Enum.CUTLASS_MLA, *sparse_backends]
        elif device_capability.major == 9:
            tail = [Enum.MLA_SPARSE]
            tail.insert(0, Enum.OTHER_SPARSE)
            return [Enum.FLASH_MLA, *tail, *([Enum.COND] if num_heads else [])]
"""


def _splatted(major: int, prefer: list[str]) -> list[str] | None:
    return priority_list(
        SPLATTED,
        "vllm/platforms/cuda.py",
        function="_get_backend_priorities",
        flag="use_mla",
        major=major,
        enum="Enum",
        prefer=prefer,
    )


def test_a_splatted_local_list_is_the_assignment_that_names_the_new_backend():
    # The branch where NEW_SPARSE competes: first, ahead of the two sparse incumbents.
    order = _splatted(10, ["NEW_SPARSE"])
    assert order == ["INFER_MLA", "CUTLASS_MLA", "NEW_SPARSE", "INFER_SPARSE", "MLA_SPARSE"]
    sparse = [name for name in order if "SPARSE" in name]
    assert incumbents(sparse, ["NEW_SPARSE"]) == ["INFER_SPARSE", "MLA_SPARSE"]
    # No preferred backend in any assignment: the first one in source order.
    assert _splatted(10, []) == ["INFER_MLA", "CUTLASS_MLA", "INFER_SPARSE", "MLA_SPARSE"]


def test_a_list_changed_in_place_or_a_conditional_splat_is_not_guessed():
    # ``tail.insert`` reorders at run time: left out. The conditional entry counts only when
    # it names a preferred backend (the order when its condition holds).
    assert _splatted(9, []) == ["FLASH_MLA"]
    assert _splatted(9, ["COND"]) == ["FLASH_MLA", "COND"]
