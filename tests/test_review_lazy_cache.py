"""lazy-cache: values frozen on the first hot call, against ordinary lazy allocation."""

from __future__ import annotations

from review_helpers import flags, line_of, patterns

FIRST_CALL_SCALES = """
class FastMLAImpl:
    def __init__(self, scale):
        self.scale = scale
        self.bmm1_scale = None
        self.bmm2_scale = None

    def forward_mqa(self, q, kv_cache, attn_metadata, layer):
        if self.bmm1_scale is None:
            # the first call decides for the life of the process
            self.bmm1_scale = self.scale * layer._q_scale_float * layer._k_scale_float
            self.bmm2_scale = layer._v_scale_float
        return decode(q, kv_cache, self.bmm1_scale, self.bmm2_scale)
"""

HASATTR_IN_CALL = """
class RotaryLayer:
    def __call__(self, positions, query, key):
        if not hasattr(self, "_cos_sin"):
            self._cos_sin = build_cache(positions.max(), query.dtype)
        return apply(self._cos_sin, query, key)
"""

BUFFER_ON_INPUT_DEVICE = """
class FastMLAImpl:
    def forward_mqa(self, q, kv_cache, attn_metadata, layer):
        if self._workspace is None:
            # the device is only known once a tensor arrives
            self._workspace = get_workspace(q.device, self.num_heads, self.kv_lora_rank)
        return decode(q, kv_cache, self._workspace)
"""

BUILT_FROM_SELF_ONLY = """
class PagedImpl:
    def forward(self, query, key, value, kv_cache, attn_metadata):
        if self._decode_wrapper is None:
            self._decode_wrapper = DecodeWrapper(self.workspace, self.kv_layout)
        return self._decode_wrapper.run(query, kv_cache)
"""

NOT_A_HOT_METHOD = """
class PagedImpl:
    def process_weights_after_loading(self, layer):
        if self.k_scale is None:
            self.k_scale = layer.k_scale.item()
"""

RECOMPUTED_EVERY_CALL = """
class PagedImpl:
    def forward(self, query, key, value, kv_cache, attn_metadata, layer):
        scale = self.scale * layer._q_scale_float
        if attn_metadata is None:
            return query
        return run(query, kv_cache, scale)
"""

CACHED_IN_LOCAL = """
class PagedImpl:
    def forward(self, query, key, value, kv_cache, attn_metadata, layer):
        out = None
        if out is None:
            out = query.new_empty(query.shape)
        return out
"""


def test_scales_cached_on_first_forward_are_flagged_at_the_check():
    found = flags(FIRST_CALL_SCALES)
    assert patterns(found) == ["lazy-cache"]
    assert found[0].line == line_of(FIRST_CALL_SCALES, "if self.bmm1_scale is None")
    assert "layer" in found[0].why and "forward_mqa" in found[0].why


def test_hasattr_guard_in_call_is_flagged():
    assert patterns(flags(HASATTR_IN_CALL)) == ["lazy-cache"]


def test_ordinary_lazy_initialisation_is_not_flagged():
    for source in (
        BUFFER_ON_INPUT_DEVICE,
        BUILT_FROM_SELF_ONLY,
        NOT_A_HOT_METHOD,
        RECOMPUTED_EVERY_CALL,
        CACHED_IN_LOCAL,
    ):
        assert flags(source) == [], source


def test_only_changed_lines_are_flagged():
    check = line_of(FIRST_CALL_SCALES, "if self.bmm1_scale is None")
    assign = line_of(FIRST_CALL_SCALES, "self.bmm1_scale = self.scale")
    assert flags(FIRST_CALL_SCALES, added=[1, 2, 3]) == []
    moved = flags(FIRST_CALL_SCALES, added=[assign])
    assert [f.line for f in moved] == [assign]
    assert [f.line for f in flags(FIRST_CALL_SCALES, added=[check, assign])] == [check]


def test_waiver_on_the_flagged_line():
    waived = FIRST_CALL_SCALES.replace(
        "if self.bmm1_scale is None:", "if self.bmm1_scale is None:  # prbot: ignore[lazy-cache]"
    )
    assert flags(waived) == []
    other = FIRST_CALL_SCALES.replace(
        "if self.bmm1_scale is None:",
        "if self.bmm1_scale is None:  # prbot: ignore[unbounded-cache]",
    )
    assert patterns(flags(other)) == ["lazy-cache"]
