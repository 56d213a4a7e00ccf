"""unbounded-cache: process-lifetime buffers keyed by shape or size, never evicted; a dict
keyed by device alone is bounded (one entry per GPU)."""

from __future__ import annotations

from review_helpers import flags, line_of, patterns

PER_DEVICE_WORKSPACE = """
import torch

_workspaces: dict[torch.device, torch.Tensor] = {}


def workspace_for(device, num_heads, rank):
    needed = sm_count(device) * num_heads * (rank + 1) * 4
    current = _workspaces.get(device)
    if current is None or current.numel() < needed:
        _workspaces[device] = torch.empty(needed, dtype=torch.uint8, device=device)
    return _workspaces[device]
"""

PER_SHAPE_CLASS_CACHE = """
class GraphedDecode:
    _buffers = {}

    def output_for(self, num_tokens, hidden):
        key = (num_tokens, hidden)
        if key not in self._buffers:
            self._buffers[key] = torch.empty(num_tokens, hidden, device="cuda")
        return self._buffers[key]
"""

SETDEFAULT_PER_SHAPE = """
_scratch = {}


def scratch(shape, device):
    return _scratch.setdefault((shape, device), torch.zeros(shape, device=device))
"""

FREED_ON_RESET = """
_workspaces: dict[torch.device, torch.Tensor] = {}


def workspace_for(device, size):
    if device not in _workspaces:
        _workspaces[device] = torch.empty(size, device=device)
    return _workspaces[device]


def release_workspaces():
    _workspaces.clear()
"""

EVICTED_BY_SIZE = """
_plans = {}


def plan_for(batch_size, device):
    if len(_plans) > 64:
        _plans.pop(next(iter(_plans)))
    _plans[(batch_size, device)] = make_plan(batch_size, device)
    return _plans[(batch_size, device)]
"""

SMALL_FLAGS_PER_DEVICE = """
_needs_e4b15: dict[int, int] = {}


def needs_e4b15(device: int = 0) -> int:
    if device not in _needs_e4b15:
        _needs_e4b15[device] = 1 if capability(device) < (8, 9) else 0
    return _needs_e4b15[device]
"""

KEYED_BY_NAME = """
_kernels = {}


def register(name, fn):
    _kernels[name] = compile_kernel(fn)
"""

INSTANCE_CACHE = """
class Runner:
    def __init__(self):
        self._buffers = {}

    def buffer(self, num_tokens):
        self._buffers[num_tokens] = torch.empty(num_tokens, device="cuda")
        return self._buffers[num_tokens]
"""

MEMOISED_CONSTANT_TABLE = """
_levels: dict[tuple[torch.device, torch.dtype], torch.Tensor] = {}


def levels(device, dtype):
    key = (device, dtype)
    table = _levels.get(key)
    if table is None:
        table = torch.tensor(FP4_LEVELS, device=device, dtype=dtype)
        _levels[key] = table
    return table
"""


PER_SHAPE_WORKSPACE = """
import torch

_workspaces: dict[tuple[torch.device, int], torch.Tensor] = {}


def workspace_for(device, num_tokens, rank):
    needed = num_tokens * (rank + 1) * 4
    if (device, num_tokens) not in _workspaces:
        _workspaces[(device, num_tokens)] = torch.empty(needed, device=device)
    return _workspaces[(device, num_tokens)]
"""


def test_a_workspace_keyed_by_device_alone_is_bounded():
    # TOKENSPEED_MLA's _g_workspace: one entry per GPU, a larger request replaces it.
    assert flags(PER_DEVICE_WORKSPACE) == []


def test_a_workspace_keyed_by_a_size_is_flagged_at_its_definition_and_says_the_key():
    found = flags(PER_SHAPE_WORKSPACE)
    assert patterns(found) == ["unbounded-cache"]
    assert found[0].line == line_of(PER_SHAPE_WORKSPACE, "_workspaces: dict")
    assert "keyed by num_tokens" in found[0].why and "device" not in found[0].why
    assert "never frees" not in found[0].why and "nothing frees" not in found[0].why


def test_a_store_added_to_an_old_cache_is_flagged_at_the_store():
    store = line_of(PER_SHAPE_WORKSPACE, "_workspaces[(device, num_tokens)] = torch.empty")
    assert [f.line for f in flags(PER_SHAPE_WORKSPACE, added=[store])] == [store]


def test_class_level_and_setdefault_caches_keyed_by_shape_are_flagged():
    assert patterns(flags(PER_SHAPE_CLASS_CACHE)) == ["unbounded-cache"]
    assert patterns(flags(SETDEFAULT_PER_SHAPE)) == ["unbounded-cache"]


def test_managed_small_or_unkeyed_caches_are_not_flagged():
    for source in (
        FREED_ON_RESET,
        EVICTED_BY_SIZE,
        SMALL_FLAGS_PER_DEVICE,
        KEYED_BY_NAME,
        INSTANCE_CACHE,
        MEMOISED_CONSTANT_TABLE,
    ):
        assert flags(source) == [], source


FIXED_SIZE_CONSTANT_PER_DEVICE = """
_ones: dict[torch.device, torch.Tensor] = {}


def ones_on(device):
    one = _ones.get(device)
    if one is None:
        one = _ones[device] = torch.ones(1, dtype=torch.float32, device=device)
    return one
"""


def test_a_fixed_size_constant_per_device_is_not_a_growing_buffer():
    assert flags(FIXED_SIZE_CONSTANT_PER_DEVICE) == []
