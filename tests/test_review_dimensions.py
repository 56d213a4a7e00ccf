"""literal-dimensions: one model's shape pinned in a capability check, against kernel limits."""

from __future__ import annotations

from review_helpers import flags, line_of, patterns

ONE_MODEL_SHAPE = """
class SwiftMLABackend(MLACommonBackend):
    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size, use_mla,
                             has_sink, use_sparse, device_capability):
        config = get_current_vllm_config().model_config.hf_text_config
        nope = getattr(config, "qk_nope_head_dim", 0)
        rope = getattr(config, "qk_rope_head_dim", 0)
        if config.v_head_dim != 128:
            return "SwiftMLA needs v_head_dim 128"
        if (getattr(config, "qk_nope_head_dim", 0) != 128
                or getattr(config, "qk_rope_head_dim", 0) != 64):
            return f"SwiftMLA needs the R1 shape, got {nope}/{rope}"
        return None
"""

TUPLE_OF_DIMENSIONS = """
class SparseBackend(MLACommonBackend):
    @classmethod
    def validate_configuration(cls, device_capability, selector_config):
        hf = selector_config.hf_config
        dims = (hf.kv_lora_rank, hf.qk_rope_head_dim)
        if dims != (512, 64):
            return ["needs kv_lora_rank=512, qk_rope_head_dim=64"]
        return []
"""

ALLOWED_SETS = """
class SwiftMLABackend(MLACommonBackend):
    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size, use_mla,
                             has_sink, use_sparse, device_capability):
        config = get_current_vllm_config().model_config.hf_text_config
        if config.qk_nope_head_dim not in (64, 128, 192):
            return "qk_nope_head_dim must be 64, 128 or 192"
        if config.qk_rope_head_dim not in [0, 64]:
            return "qk_rope_head_dim must be 0 or 64"
        return None
"""

ONE_KERNEL_LIMIT = """
class SparseBackend(MLACommonBackend):
    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size, use_mla,
                             has_sink, use_sparse, device_capability):
        if get_current_vllm_config().model_config.hf_text_config.kv_lora_rank != 512:
            return "the kernel is built for kv_lora_rank 512"
        if device_capability.major != 10:
            return "needs SM100"
        return None
"""

HEAD_SIZE_AND_BLOCKS = """
class PagedBackend(AttentionBackend):
    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size, use_mla,
                             has_sink, use_sparse, device_capability):
        if head_size != 128 and block_size != 64:
            return "unsupported"
        return None
"""

OUTSIDE_A_CHECK = """
class SwiftMLAImpl(MLACommonImpl):
    def __init__(self, config):
        assert config.qk_nope_head_dim == 128 and config.qk_rope_head_dim == 64
        self.scale = (config.qk_nope_head_dim + config.qk_rope_head_dim) ** -0.5
"""

NO_ROPE_SENTINEL = """
class SparseBackend(MLACommonBackend):
    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size, use_mla,
                             has_sink, use_sparse, device_capability):
        config = get_current_vllm_config().model_config.hf_text_config
        if config.qk_rope_head_dim == 0 and config.kv_lora_rank == 512:
            return None
        return "only the NoPE variant"
"""


def test_a_pinned_model_shape_is_flagged_once_at_the_first_pin():
    found = flags(ONE_MODEL_SHAPE)
    assert patterns(found) == ["literal-dimensions"]
    assert found[0].line == line_of(ONE_MODEL_SHAPE, "config.v_head_dim != 128")
    assert "qk_nope_head_dim=128" in found[0].why and "v_head_dim=128" in found[0].why
    # The check returns its reason (vLLM raises it when the backend is chosen): the point
    # says what is true, that the backend accepts one model's shape, and nothing "silent".
    assert "pins" in found[0].why and "refused here, with the reason it returns" in found[0].why
    assert "silent" not in found[0].why


def test_a_pinned_shape_in_a_boolean_check_says_refused_not_a_reason():
    boolean = ONE_MODEL_SHAPE.replace('return "SwiftMLA needs v_head_dim 128"', "return False")
    boolean = boolean.replace(
        'return f"SwiftMLA needs the R1 shape, got {nope}/{rope}"', "return False"
    )
    [found] = flags(boolean.replace("return None", "return True"))
    assert found.why.endswith("refused here") and "reason" not in found.why


def test_a_tuple_of_dimensions_compared_to_literals_is_flagged():
    found = flags(TUPLE_OF_DIMENSIONS)
    assert patterns(found) == ["literal-dimensions"]
    assert "kv_lora_rank=512" in found[0].why


def test_a_pin_on_an_unchanged_line_is_not_flagged():
    unchanged = line_of(ONE_MODEL_SHAPE, "return None")
    assert flags(ONE_MODEL_SHAPE, added=[unchanged]) == []
    second = line_of(ONE_MODEL_SHAPE, 'getattr(config, "qk_nope_head_dim", 0) != 128')
    assert [f.line for f in flags(ONE_MODEL_SHAPE, added=[second])] == [second]


def test_kernel_limits_and_allowed_sets_are_not_flagged():
    for source in (
        ALLOWED_SETS,
        ONE_KERNEL_LIMIT,
        HEAD_SIZE_AND_BLOCKS,
        OUTSIDE_A_CHECK,
        NO_ROPE_SENTINEL,
    ):
        assert flags(source) == [], source
