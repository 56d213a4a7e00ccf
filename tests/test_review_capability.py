"""capability-contradiction: declared uniform query lengths, supports_* that then rejects."""

from __future__ import annotations

from review_helpers import flags, line_of, patterns

UNIFORM_WITH_FALLBACK = """
class SwiftMLAMetadataBuilder(MLACommonMetadataBuilder):
    query_len_support: ClassVar[QueryLenSupport] = QueryLenSupport.UNIFORM


class SwiftMLAImpl(MLACommonImpl):
    def forward_mqa(self, q, kv_cache, attn_metadata, layer):
        decode = attn_metadata.decode
        if attn_metadata.num_decode_tokens % attn_metadata.num_decodes != 0:
            logger.warning_once("uneven query lengths; flattening")
            q = q.unsqueeze(1)
        else:
            q = q.view(attn_metadata.num_decodes, -1, q.shape[-2], q.shape[-1])
        return run(q, kv_cache, decode.block_table)
"""

UNIFORM_ENFORCED = """
class SwiftMLAMetadataBuilder(MLACommonMetadataBuilder):
    query_len_support: ClassVar[QueryLenSupport] = QueryLenSupport.UNIFORM


class SwiftMLAImpl(MLACommonImpl):
    def forward_mqa(self, q, kv_cache, attn_metadata, layer):
        if attn_metadata.num_decode_tokens % attn_metadata.num_decodes != 0:
            raise ValueError("SwiftMLA needs uniform query lengths")
        return run(q.view(attn_metadata.num_decodes, -1, *q.shape[-2:]), kv_cache)
"""

VARLEN_BACKEND = """
class RaggedMetadataBuilder(MLACommonMetadataBuilder):
    query_len_support: ClassVar[QueryLenSupport] = QueryLenSupport.VARLEN


class RaggedImpl(MLACommonImpl):
    def forward_mqa(self, q, kv_cache, attn_metadata, layer):
        if attn_metadata.num_decode_tokens % attn_metadata.num_decodes != 0:
            q = q.unsqueeze(1)
        return run(q, kv_cache)
"""

UNIFORM_PADDING_TO_BLOCK = """
class SwiftMLAMetadataBuilder(MLACommonMetadataBuilder):
    query_len_support: ClassVar[QueryLenSupport] = QueryLenSupport.UNIFORM

    def build(self, common_prefix_len, common_attn_metadata):
        num_tokens = common_attn_metadata.num_actual_tokens
        if num_tokens % 8 != 0:
            num_tokens += 8 - num_tokens % 8
        return make_metadata(num_tokens)
"""

UNIFORM_IN_OTHER_BACKEND = """
class SwiftMLAMetadataBuilder(MLACommonMetadataBuilder):
    query_len_support: ClassVar[QueryLenSupport] = QueryLenSupport.UNIFORM


class PrefillHelper:
    def split(self, attn_metadata, q):
        if attn_metadata.num_decode_tokens % attn_metadata.num_decodes != 0:
            return q.unsqueeze(1)
        return q
"""

SUPPORTS_SINK_THEN_REJECTS = """
class SwiftBackend(AttentionBackend):
    @classmethod
    def supports_sink(cls) -> bool:
        return True


class SwiftImpl(AttentionImpl):
    def __init__(self, num_heads, head_size, scale, sinks=None):
        if sinks is not None:
            raise NotImplementedError("SwiftImpl does not support attention sinks")
        self.scale = scale
"""

SUPPORTS_SINK_AND_USES_IT = """
class SwiftBackend(AttentionBackend):
    @classmethod
    def supports_sink(cls) -> bool:
        return True


class SwiftImpl(AttentionImpl):
    def __init__(self, num_heads, head_size, scale, sinks=None):
        if sinks is not None and sinks.shape[0] != num_heads:
            self.sinks = sinks.expand(num_heads)
        self.sinks = sinks
"""

SUPPORTS_CONDITIONAL = """
class SwiftBackend(AttentionBackend):
    @classmethod
    def supports_sink(cls) -> bool:
        return current_platform.is_device_capability(100)


class SwiftImpl(AttentionImpl):
    def __init__(self, num_heads, head_size, scale, sinks=None):
        if sinks is not None and not current_platform.is_device_capability(100):
            raise NotImplementedError("sinks need SM100")
"""

SUPPORTS_OTHER_FEATURE = """
class SwiftBackend(AttentionBackend):
    @classmethod
    def supports_sink(cls) -> bool:
        return True


class SwiftImpl(AttentionImpl):
    def __init__(self, num_heads, head_size, scale, alibi_slopes=None):
        if alibi_slopes is not None:
            raise NotImplementedError("no ALiBi")
"""

REQUIRES_THE_FEATURE = """
class WindowBackend(AttentionBackend):
    @classmethod
    def supports_sliding_window(cls) -> bool:
        return True


class WindowImpl(AttentionImpl):
    def window_mask(self):
        if self.sliding_window is None:
            raise NotImplementedError("sliding_window must be set for a window mask")
        return make_mask(self.sliding_window)
"""

VALIDATES_THE_FEATURE = """
class SwiftBackend(AttentionBackend):
    @classmethod
    def supports_sink(cls) -> bool:
        return True


class SwiftImpl(AttentionImpl):
    def __init__(self, num_heads, head_size, scale, sinks=None):
        if sinks is not None and sinks.shape[0] != num_heads:
            raise ValueError(f"sinks must have shape [{num_heads}]")
        self.sinks = sinks
"""


def test_uniform_declaration_with_an_uneven_fallback_is_flagged():
    found = flags(UNIFORM_WITH_FALLBACK)
    assert patterns(found) == ["capability-contradiction"]
    assert found[0].line == line_of(UNIFORM_WITH_FALLBACK, "% attn_metadata.num_decodes")
    assert "QueryLenSupport.UNIFORM" in found[0].why


def test_the_declaration_line_alone_changed_still_names_the_contradiction():
    declaration = line_of(UNIFORM_WITH_FALLBACK, "QueryLenSupport.UNIFORM")
    found = flags(UNIFORM_WITH_FALLBACK, added=[declaration])
    assert [f.line for f in found] == [declaration]
    assert flags(UNIFORM_WITH_FALLBACK, added=[line_of(UNIFORM_WITH_FALLBACK, "return run")]) == []


def test_supports_true_then_rejected_is_flagged():
    found = flags(SUPPORTS_SINK_THEN_REJECTS)
    assert patterns(found) == ["capability-contradiction"]
    assert "supports_sink" in found[0].why


def test_consistent_capabilities_are_not_flagged():
    for source in (
        UNIFORM_ENFORCED,
        VARLEN_BACKEND,
        UNIFORM_PADDING_TO_BLOCK,
        UNIFORM_IN_OTHER_BACKEND,
        SUPPORTS_SINK_AND_USES_IT,
        SUPPORTS_CONDITIONAL,
        SUPPORTS_OTHER_FEATURE,
        REQUIRES_THE_FEATURE,
        VALIDATES_THE_FEATURE,
    ):
        assert flags(source) == [], source
