"""The MLA prefill table: the prefill registry, its Blackwell priority order, each class.

MLA models prefill and decode with different backends; prefill backends have their own
registry (``vllm/v1/attention/backends/mla/prefill/registry.py``) and selector.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from bot.gendocs.attention_classes import DTYPE_SHORT
from bot.gendocs.source import (
    SourceTree,
    attribute_names,
    class_method,
    class_path_file,
    enum_members,
    is_major_compare,
)

PREFILL_DIR = "vllm/v1/attention/backends/mla/prefill"
PREFILL_REGISTRY = f"{PREFILL_DIR}/registry.py"
PREFILL_SELECTOR = f"{PREFILL_DIR}/selector.py"
PLATFORM_INTERFACE = "vllm/platforms/interface.py"
# Prefill backends whose description the code does not carry (as vLLM's generator has them).
PREFILL_DESCRIPTIONS = {
    "TRTLLM_RAGGED": "TensorRT-LLM ragged attention",
    "FLASHINFER": "FlashInfer CUTLASS backend",
    "FLASH_ATTN": "FlashAttention varlen (FA2/FA3/FA4)",
}


MLA_ATTENTION = "vllm/model_executor/layers/attention/mla_attention.py"
# Before the prefill registry (vLLM up to 0.20), MLACommonImpl chose among these by
# `use_*_prefill()` switches, in this order; FlashAttention is the fallback. The texts are
# the ones vLLM's generator of those releases writes.
LEGACY_PREFILL = (
    (
        "use_trtllm_ragged_deepseek_prefill",
        "TRT-LLM Ragged‡",
        "TensorRT-LLM ragged attention",
        "Default on SM100",
        "`-ac.use_trtllm_ragged_deepseek_prefill=0`",
        "DeepSeek R1 dims only",
    ),
    (
        "use_flashinfer_prefill",
        "FlashInfer",
        "FlashInfer CUTLASS backend",
        "`-ac.disable_flashinfer_prefill=0`",
        "`-ac.disable_flashinfer_prefill=1`",
        "DeepSeek R1 dims only",
    ),
    (
        "use_cudnn_prefill",
        "cuDNN",
        "cuDNN-based attention",
        "`-ac.use_cudnn_prefill=1`",
        "`-ac.use_cudnn_prefill=0`",
        "",
    ),
)
LEGACY_FALLBACK = (
    "FlashAttention",
    "FlashAttention varlen (FA2/FA3)",
    "Default fallback",
    "Use other backends",
    "FA3 on SM90, FA2 otherwise",
)


@dataclass
class PrefillInfo:
    name: str
    description: str
    dtypes: list[str]
    compute_capability: str
    notes: str
    default_on_blackwell: bool = False
    # Only in the older layout (no prefill registry): how a user turns the backend on / off.
    enable: str = ""
    disable: str = ""


def legacy_prefill_backends(source: SourceTree) -> list[PrefillInfo] | None:
    """The prefill rows of releases without a prefill registry; None when neither shape."""
    tree = source.parse(MLA_ATTENTION, required=False)
    if tree is None:
        return None
    rows: list[PrefillInfo] = []
    for function, name, description, enable, disable, notes in LEGACY_PREFILL:
        capability = _capability_family(source, tree, function)
        if capability is not None:
            rows.append(
                PrefillInfo(name, description, [], capability, notes, False, enable, disable)
            )
    name, description, enable, disable, notes = LEGACY_FALLBACK
    rows.append(PrefillInfo(name, description, [], "Any", notes, False, enable, disable))
    return rows


def _capability_family(source: SourceTree, tree: ast.Module, name: str) -> str | None:
    """``is_device_capability_family(100)`` in function ``name`` -> "10.x"."""
    function = source.find_function(tree, name)
    if function is None:
        return None
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "is_device_capability_family"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, int)
        ):
            return f"{node.args[0].value // 10}.x"
    return None


def prefill_priorities(source: SourceTree) -> dict[str, list[str]]:
    """Blackwell and default prefill orders: the selector (0.21-0.32) or the Platform (0.33)."""
    tree = source.parse(PREFILL_SELECTOR, required=False)
    function = source.find_function(tree, "_get_mla_prefill_backend_priorities") if tree else None
    found: dict[str, list[str]] = {}
    if function is None:
        return platform_prefill_priorities(source)
    for node in ast.walk(function):
        if not isinstance(node, ast.If):
            continue
        blackwell = is_major_compare(node.test) and node.test.comparators[0].value == 10
        for statement in node.body:
            if isinstance(statement, ast.Return) and isinstance(statement.value, ast.List):
                found["blackwell" if blackwell else "default"] = attribute_names(
                    statement.value.elts
                )
        for statement in node.orelse:
            if isinstance(statement, ast.Return) and isinstance(statement.value, ast.List):
                found["default"] = attribute_names(statement.value.elts)
    return found


def _listed_backends(statement: ast.stmt) -> list[str] | None:
    """``return [E.A, E.B]`` or ``name = [E.A, E.B]`` -> ``["A", "B"]``."""
    if isinstance(statement, ast.Return) or (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        if isinstance(statement.value, ast.List):
            return attribute_names(statement.value.elts)
    return None


def _last_list(statements: list[ast.stmt], nested: bool) -> list[str] | None:
    found = None
    for statement in statements:
        listed = _listed_backends(statement)
        if listed is not None:
            found = listed
        elif nested and isinstance(statement, ast.If):
            inner = _last_list([*statement.body, *statement.orelse], True)
            if inner is not None:
                found = inner
    return found


def platform_prefill_priorities(source: SourceTree) -> dict[str, list[str]]:
    """``Platform.get_mla_prefill_backend_cls`` (vLLM 0.33): the last list of each branch."""
    tree = source.parse(PLATFORM_INTERFACE, required=False)
    platform = source.find_class(tree, "Platform") if tree else None
    method = class_method(platform, "get_mla_prefill_backend_cls") if platform else None
    found: dict[str, list[str]] = {}
    if method is None:
        return found
    for node in ast.walk(method):
        if not isinstance(node, ast.If):
            continue
        if is_major_compare(node.test) and node.test.comparators[0].value == 10:
            listed = _last_list(node.body, True)
            if listed is not None:
                found["blackwell"] = listed
        else:
            listed = _last_list([*node.body, *node.orelse], False)
            if listed is not None:
                found["default"] = listed
    return found


def prefill_backends(source: SourceTree, unreadable: list[str] | None = None) -> list[PrefillInfo]:
    """Rows of the MLA prefill table, in Blackwell priority order.

    Backends whose class cannot be read are left out and named in ``unreadable``.
    """
    tree = source.parse(PREFILL_REGISTRY, required=False)
    enum = source.find_class(tree, "MLAPrefillBackendEnum") if tree else None
    if enum is None:
        return []
    registry = enum_members(enum)
    if not registry:
        return []
    priorities = prefill_priorities(source)
    order = priorities.get("blackwell", list(registry))
    rows: list[PrefillInfo] = []
    for name in order:
        if name not in registry:
            continue
        row = _prefill_row(source, name, registry[name])
        if row is None:
            if unreadable is not None:
                unreadable.append(name)
            continue
        row.default_on_blackwell = name == order[0] and bool(priorities.get("blackwell"))
        rows.append(row)
    return rows


def _prefill_row(source: SourceTree, name: str, class_path: str) -> PrefillInfo | None:
    path, class_name = class_path_file(class_path)
    tree = source.parse(path, required=False)
    if tree is None:
        if not source.exists(path):
            source.report(
                PREFILL_REGISTRY,
                f"prefill backend {name} points to {class_path}, but {path} does not exist",
            )
        return None
    node = source.find_class(tree, class_name)
    if node is None:
        source.report(path, f"prefill backend {name}: class {class_name} is not defined here")
        return None
    requires_r1 = False
    dtypes = ["fp16", "bf16"]
    for item in node.body:
        if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant):
            if any(
                isinstance(t, ast.Name) and t.id == "requires_r1_mla_dimensions"
                for t in item.targets
            ):
                requires_r1 = bool(item.value.value)
        if (
            isinstance(item, ast.AnnAssign)
            and isinstance(item.target, ast.Name)
            and item.target.id == "supported_dtypes"
            and isinstance(item.value, ast.List)
        ):
            listed = [DTYPE_SHORT.get(name, name) for name in attribute_names(item.value.elts)]
            if listed:
                dtypes = listed
    display = name
    get_name = class_method(node, "get_name")
    if get_name is not None:
        for n in ast.walk(get_name):
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Constant):
                display = n.value.value
    compute_capability = "Any"
    method = class_method(node, "supports_compute_capability")
    if method is not None:
        for n in ast.walk(method):
            if is_major_compare(n):
                compute_capability = f"{n.comparators[0].value}.x"
    dimensions, by_version = mla_dimensions(node)
    if dimensions:
        notes = dimension_notes(dimensions, by_version)
    elif requires_r1:
        notes = "DeepSeek R1 dims only"
    elif name == "FLASH_ATTN":
        notes = "FA4 on SM100+, FA3 on SM90, FA2 otherwise"
    else:
        notes = ""
    return PrefillInfo(
        name=str(display),
        description=PREFILL_DESCRIPTIONS.get(name, ""),
        dtypes=dtypes,
        compute_capability=compute_capability,
        notes=notes,
    )


# -- MLA dimensions (vLLM 0.24 on): which head shapes a prefill backend takes ---------------


def _dimensions_call(node: ast.AST) -> str | None:
    """``MLADimensions(qk_nope_head_dim=128, ...)`` -> "(qk_nope_head_dim=128, ...)"."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "MLADimensions"
    ):
        return None
    values = {
        k.arg: k.value.value
        for k in node.keywords
        if k.arg and isinstance(k.value, ast.Constant) and isinstance(k.value.value, int)
    }
    names = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    if any(n not in values for n in names):
        return None
    return "(" + ", ".join(f"{n}={values[n]}" for n in names) + ")"


def _dimensions_returned(statements: list[ast.stmt], named: dict[str, str]) -> list[str]:
    """``return mla_dimensions == X`` / ``in (X, Y)`` -> the dimensions named."""

    def one(node: ast.AST) -> str | None:
        return named.get(node.id) if isinstance(node, ast.Name) else _dimensions_call(node)

    for statement in statements:
        value = statement.value if isinstance(statement, ast.Return) else None
        if not (
            isinstance(value, ast.Compare)
            and isinstance(value.left, ast.Name)
            and value.left.id == "mla_dimensions"
            and len(value.ops) == 1
        ):
            continue
        right = value.comparators[0]
        if isinstance(value.ops[0], ast.Eq):
            found = one(right)
            return [found] if found else []
        if isinstance(value.ops[0], ast.In) and isinstance(right, ast.List | ast.Tuple | ast.Set):
            return [d for d in (one(e) for e in right.elts) if d]
    return []


def _fa_version_test(node: ast.AST) -> int | None:
    if not (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and isinstance(node.comparators[0], ast.Constant)
        and isinstance(node.comparators[0].value, int)
    ):
        return None
    left = node.left
    if (isinstance(left, ast.Name) and left.id == "fa_version") or (
        isinstance(left, ast.Call)
        and isinstance(left.func, ast.Name)
        and left.func.id == "get_flash_attn_version"
    ):
        return node.comparators[0].value
    return None


def mla_dimensions(node: ast.ClassDef) -> tuple[list[str], dict[int | None, list[str]]]:
    """Dimensions a prefill class supports, and (when it branches on it) per FA version."""
    listed: list[str] = []
    for item in node.body:
        if (
            isinstance(item, ast.AnnAssign)
            and isinstance(item.target, ast.Name)
            and item.target.id == "supported_mla_dimensions"
            and isinstance(item.value, ast.List)
        ):
            listed = [d for d in (_dimensions_call(e) for e in item.value.elts) if d]
    method = class_method(node, "supports_mla_dimensions")
    if method is None:
        return listed, {}
    named = {
        s.targets[0].id: d
        for s in method.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and (d := _dimensions_call(s.value))
    }
    by_version: dict[int | None, list[str]] = {}
    for statement in method.body:
        if isinstance(statement, ast.Return):
            if found := _dimensions_returned([statement], named):
                by_version[None] = found
        elif isinstance(statement, ast.If):
            version = _fa_version_test(statement.test)
            if version is None:
                continue
            if found := _dimensions_returned(statement.body, named):
                by_version[version] = found
            if found := _dimensions_returned(statement.orelse, named):
                by_version[None] = found
    merged: list[str] = []
    for dims in by_version.values():
        merged.extend(d for d in dims if d not in merged)
    return (merged, by_version) if merged else (listed, {})


def dimension_notes(dimensions: list[str], by_version: dict[int | None, list[str]]) -> str:
    """ "(…) or (…) only", or per dimension the FA versions that take it."""
    if not any(version is not None for version in by_version):
        return " or ".join(dimensions) + " only"
    default = by_version.get(None, [])
    parts = []
    for dimension in dimensions:
        versions = [f"FA{v}" for v in (2, 3, 4) if dimension in by_version.get(v, default)]
        parts.append(f"{dimension} ({'/'.join(versions)}{'' if len(versions) == 3 else ' only'})")
    return " or ".join(parts)
