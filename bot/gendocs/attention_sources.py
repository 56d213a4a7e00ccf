"""The whole attention-backend model of one revision: registry, variants, priorities, prefill.

Reads ``vllm/v1/attention/backends/registry.py`` and every class it names, the CUDA priority
lists in ``vllm/platforms/cuda.py``, the MLA prefill registry and selector, and the feature
switches that split FLASH_ATTN (FA2/FA3/FA4) and FLASHINFER (native/TRTLLM) into rows.
Nothing is imported; every file is parsed once.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from bot.gendocs.attention_classes import BackendInfo, read_backend
from bot.gendocs.mla_prefill import (
    PREFILL_REGISTRY,
    PrefillInfo,
    legacy_prefill_backends,
    prefill_backends,
)
from bot.gendocs.source import (
    SourceTree,
    attribute_names,
    enum_members,
    is_major_compare,
)

BACKENDS_DIR = "vllm/v1/attention/backends"
REGISTRY = f"{BACKENDS_DIR}/registry.py"
CUDA_PLATFORM = "vllm/platforms/cuda.py"
FA_UTILS = f"{BACKENDS_DIR}/fa_utils.py"
FA_INTERFACE = "vllm/vllm_flash_attn/flash_attn_interface.py"
FLASHINFER_UTILS = "vllm/utils/flashinfer.py"

DEFAULT_SKIP = ("CUSTOM", "TORCH_SDPA")
# KV-cache dtypes only a dedicated SM100 kernel handles; the native FlashInfer row omits them.
FLASHINFER_KERNEL_ONLY_KV = ("nvfp4",)
FP8_KV_DTYPES = ("fp8", "fp8_e4m3", "fp8_e5m2")


@dataclass
class AttentionModel:
    """Everything the attention-backend tables are rendered from."""

    backends: list[BackendInfo] = field(default_factory=list)
    # "standard_sm100", "standard_default", "mla_sm100", "mla_default" -> backend names
    priorities: dict[str, list[str]] = field(default_factory=dict)
    # Names a priority list takes from a list chosen at run time (``*sparse_backends``):
    # their place depends on the model, which the doc marks with a footnote.
    conditional: dict[str, list[str]] = field(default_factory=dict)
    prefill: list[PrefillInfo] = field(default_factory=list)
    # "registry": the prefill registry (vLLM 0.21 on); "legacy": the `use_*_prefill()`
    # switches of mla_attention.py (up to 0.20), a table with Enable / Disable columns.
    prefill_layout: str = "registry"
    flash_attn_variants: bool = False
    flashinfer_variants: bool = False
    # Registered backends whose class could not be read: their rows are unknown, not gone.
    unreadable: list[str] = field(default_factory=list)
    unreadable_prefill: list[str] = field(default_factory=list)  # the same, MLA prefill
    # Backends whose class a factory call builds ("NAME (Class = factory(...) in path)").
    factory_built: list[str] = field(default_factory=list)


def extract(source: SourceTree, skip: tuple[str, ...] | list[str] = DEFAULT_SKIP) -> AttentionModel:
    """Read the attention-backend model of the revision behind ``source``."""
    model = AttentionModel()
    registry = source.parse(REGISTRY)
    enum = source.find_class(registry, "AttentionBackendEnum") if registry else None
    if registry is not None and enum is None:
        source.report(REGISTRY, "class AttentionBackendEnum is not defined here")
    members = enum_members(enum) if enum is not None else {}
    for name, class_path in members.items():
        if name in skip:
            continue
        if not isinstance(class_path, str) or "." not in class_path:
            source.report(REGISTRY, f"backend {name}: {class_path!r} is not a class path")
            model.unreadable.append(name)
            continue
        info = read_backend(source, name, class_path, model.factory_built)
        if info is not None:
            model.backends.append(info)
        elif not any(f.startswith(f"{name} ") for f in model.factory_built):
            model.unreadable.append(name)
    fa = flash_attn_features(source)
    if fa is not None:
        model.backends = _split_flash_attn(model.backends, fa)
        model.flash_attn_variants = True
    trtllm = flashinfer_trtllm_capability(source)
    if trtllm is not None:
        model.backends = _split_flashinfer(model.backends, trtllm)
        model.flashinfer_variants = True
    model.priorities = cuda_priorities(source, model.conditional)
    if source.exists(PREFILL_REGISTRY):
        model.prefill = prefill_backends(source, model.unreadable_prefill)
    else:
        legacy = legacy_prefill_backends(source)
        if legacy is not None:
            model.prefill, model.prefill_layout = legacy, "legacy"
    return model


# -- FLASH_ATTN versions ------------------------------------------------------------------


def _names_flash_attn_version(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "fa_version"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "get_flash_attn_version"
    )


def flash_attn_features(source: SourceTree) -> dict[str, dict] | None:
    """Per FA version: compute capability, fp8 KV support and sink support, from fa_utils."""
    tree = source.parse(FA_UTILS, required=False)
    if tree is None:
        return None
    fa3_fp8 = fa3_sinks = fa4_sinks = False
    # From vLLM 0.22 FA3 always takes fp8 KV caches and the switch function is gone.
    fa3_fp8 = source.find_function(tree, "flash_attn_supports_fp8") is None
    fa3_cc: str | None = None
    fa4_cc: str | None = None
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        if function.name == "flash_attn_supports_fp8":
            fa3_fp8 = fa3_fp8 or any(
                isinstance(n, ast.Compare) and _is_version_call(n.left) for n in ast.walk(function)
            )
        elif function.name == "flash_attn_supports_sinks":
            for versions in _compared_versions(function):
                fa3_sinks = fa3_sinks or 3 in versions
                fa4_sinks = fa4_sinks or 4 in versions
        elif function.name == "get_flash_attn_version":
            for node in ast.walk(function):
                if isinstance(node, ast.IfExp) and isinstance(node.test, ast.BoolOp):
                    for value in node.test.values:
                        if is_major_compare(value):
                            fa3_cc = f"{value.comparators[0].value}.x"
                            break
                if isinstance(node, ast.If):
                    test = node.test
                    if isinstance(test, ast.BoolOp):
                        tests = [v for v in test.values if isinstance(v, ast.Compare)]
                    else:
                        tests = [test] if isinstance(test, ast.Compare) else []
                    for compare in tests:
                        if not is_major_compare(compare) or not isinstance(
                            compare.comparators[0].value, int
                        ):
                            continue
                        op, value = compare.ops[0], compare.comparators[0].value
                        if isinstance(op, ast.Eq) and fa3_cc is None:
                            fa3_cc = f"{value}.x"
                        elif isinstance(op, ast.GtE) and fa4_cc is None:
                            fa4_cc = f"≥{value}.0"
    if fa4_cc is None:
        fa4_cc = _fa4_capability_from_interface(source)
    features = {
        "fa2": {"sink": False, "fp8": False, "cc": None},
        "fa3": {"sink": fa3_sinks, "fp8": fa3_fp8, "cc": fa3_cc},
        "fa4": {"sink": fa4_sinks, "fp8": False, "cc": fa4_cc},
    }
    # vLLM 0.27 on: fp8 support per version in flash_attn_supports_kv_cache_dtype; each row
    # then keeps the fp8 dtypes the backend lists only where its version takes them.
    per_dtype = source.find_function(tree, "flash_attn_supports_kv_cache_dtype")
    if per_dtype is not None:
        versions = set().union(*_compared_versions(per_dtype))
        for number, key in ((2, "fa2"), (3, "fa3"), (4, "fa4")):
            features[key]["fp8"] = number in versions
            features[key]["fp8_filter"] = True
    return features


def _is_version_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "get_flash_attn_version"
    )


def _compared_versions(function: ast.FunctionDef) -> list[set[object]]:
    """Versions a function compares the FA version with (``== 3``, ``in (3, 4)``)."""
    found: list[set[object]] = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        if not _names_flash_attn_version(node.left):
            continue
        right = node.comparators[0]
        if isinstance(node.ops[0], ast.Eq) and isinstance(right, ast.Constant):
            found.append({right.value})
        elif isinstance(node.ops[0], ast.In) and isinstance(right, ast.Tuple | ast.List | ast.Set):
            found.append({e.value for e in right.elts if isinstance(e, ast.Constant)})
    return found


def _fa4_capability_from_interface(source: SourceTree) -> str | None:
    """Fallback: the ``cc not in [9, 10, 11]`` test of ``_is_fa4_supported``."""
    tree = source.parse(FA_INTERFACE, required=False)
    function = source.find_function(tree, "_is_fa4_supported") if tree else None
    if function is None:
        return None
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.NotIn)
            and isinstance(node.comparators[0], ast.List)
        ):
            caps = sorted(
                e.value
                for e in node.comparators[0].elts
                if isinstance(e, ast.Constant) and isinstance(e.value, int)
            )
            if caps:
                return f"{caps[0]}.x-{caps[-1]}.x"
    return None


def _split_flash_attn(backends: list[BackendInfo], fa: dict[str, dict]) -> list[BackendInfo]:
    out: list[BackendInfo] = []
    for backend in backends:
        if backend.name != "FLASH_ATTN":
            out.append(backend)
            continue
        for order, key in enumerate(("fa2", "fa3", "fa4")):
            row = copy.deepcopy(backend)
            row.version, row.sort_order = f"{key.upper()}*", order
            row.sink = fa[key]["sink"]
            if fa[key]["cc"]:
                row.compute_capability = fa[key]["cc"]
            if fa[key].get("fp8_filter"):
                keep = fa[key]["fp8"]
                plain = [d for d in row.kv_dtypes if d not in FP8_KV_DTYPES]
                row.kv_dtypes = plain + [d for d in row.kv_dtypes if keep and d in FP8_KV_DTYPES]
            elif fa[key]["fp8"]:
                row.kv_dtypes = row.kv_dtypes + [d for d in FP8_KV_DTYPES if d not in row.kv_dtypes]
            out.append(row)
    return out


# -- FLASHINFER native / TRTLLM ------------------------------------------------------------


def flashinfer_trtllm_capability(source: SourceTree) -> tuple[str | None, str | None] | None:
    """What ``supports_trtllm_attention`` checks: (XQA's exact device, trtllm-gen's family).

    ``is_device_capability(90)`` -> "9.0" (vLLM 0.25 on: the XQA path on Hopper),
    ``is_device_capability_family(100)`` -> "10.x". None when the function tests neither.
    """
    tree = source.parse(FLASHINFER_UTILS, required=False)
    function = source.find_function(tree, "supports_trtllm_attention") if tree else None
    if function is None:
        return None
    exact = family = None
    for node in ast.walk(function):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, int)
        ):
            continue
        value = node.args[0].value
        if node.func.attr == "is_device_capability_family" and family is None:
            family = f"{value // 10}.x"
        elif node.func.attr == "is_device_capability" and exact is None:
            exact = f"{value // 10}.{value % 10}"
    return (exact, family) if exact or family else None


def _split_flashinfer(
    backends: list[BackendInfo], capabilities: tuple[str | None, str | None]
) -> list[BackendInfo]:
    """FLASHINFER as Native + TRTLLM rows, or (with an XQA path) Native + XQA + trtllm-gen."""
    xqa_cc, trtllm_cc = capabilities
    out: list[BackendInfo] = []
    for backend in backends:
        if backend.name != "FLASHINFER":
            out.append(backend)
            continue
        lowest = backend.compute_capability.replace(".x", "").split("-")[0]
        native = copy.deepcopy(backend)
        native.version, native.sort_order, native.sink = "Native†", 0, False
        native.compute_capability = f"{lowest}.x-9.x"
        native.kv_dtypes = [d for d in native.kv_dtypes if d not in FLASHINFER_KERNEL_ONLY_KV]
        out.append(native)
        if xqa_cc is not None:
            xqa = copy.deepcopy(native)
            xqa.version, xqa.sort_order, xqa.compute_capability = "XQA†", 1, xqa_cc
            xqa.non_causal = False
            out.append(xqa)
        if trtllm_cc is not None:
            trtllm = copy.deepcopy(backend)
            trtllm.version = "trtllm-gen†" if xqa_cc is not None else "TRTLLM†"
            trtllm.sort_order, trtllm.sink = 2 if xqa_cc is not None else 1, True
            trtllm.compute_capability = trtllm_cc
            out.append(trtllm)
    return out


# -- CUDA priorities -------------------------------------------------------------------------


def cuda_priorities(
    source: SourceTree, conditional: dict[str, list[str]] | None = None
) -> dict[str, list[str]]:
    """The four priority lists of ``_get_backend_priorities`` in cuda.py.

    ``conditional`` receives, per list, the names spliced in from a list variable.
    """
    conditional = conditional if conditional is not None else {}
    tree = source.parse(CUDA_PLATFORM)
    function = source.find_function(tree, "_get_backend_priorities") if tree else None
    if tree is not None and function is None:
        source.report(CUDA_PLATFORM, "function _get_backend_priorities is not defined here")
    priorities: dict[str, list[str]] = {}
    if function is None:
        return priorities
    for statement in function.body:
        if not isinstance(statement, ast.If):
            continue
        if isinstance(statement.test, ast.Name) and statement.test.id == "use_mla":
            _branch_priorities(statement.body, priorities, "mla", conditional)
            if statement.orelse:
                _branch_priorities(statement.orelse, priorities, "standard", conditional)
        else:
            _branch_priorities([statement], priorities, "standard", conditional)
    return priorities


def _is_blackwell_test(test: ast.expr) -> bool:
    """``x.major == 10``, alone or inside an ``and`` (vLLM 0.26: ``... and not use_non_causal``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_is_blackwell_test(value) for value in test.values)
    return (
        is_major_compare(test)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and len(test.comparators) == 1
        and test.comparators[0].value == 10
    )


def _list_assignments(statements: list[ast.stmt]) -> dict[str, list[str]]:
    """Lists assigned to names here or one ``if`` level down (the last branch wins)."""
    found: dict[str, list[str]] = {}
    candidates: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, ast.If):
            candidates.extend(statement.body)
            candidates.extend(statement.orelse)
        else:
            candidates.append(statement)
    for statement in candidates:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.List):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = attribute_names(statement.value.elts)
    return found


def _returned_backends(statements: list[ast.stmt], spliced: list[str] | None = None) -> list[str]:
    variables = _list_assignments(statements)
    spliced = spliced if spliced is not None else []
    for statement in statements:
        if isinstance(statement, ast.Return) and isinstance(statement.value, ast.List):
            names: list[str] = []
            for element in statement.value.elts:
                if isinstance(element, ast.Attribute):
                    names.append(element.attr)
                elif (
                    isinstance(element, ast.Starred)
                    and isinstance(element.value, ast.Name)
                    and element.value.id in variables
                ):
                    names.extend(variables[element.value.id])
                    spliced.extend(variables[element.value.id])
            return names
    return []


def _branch_priorities(
    statements: list[ast.stmt],
    priorities: dict[str, list[str]],
    prefix: str,
    conditional: dict[str, list[str]],
) -> None:
    for statement in statements:
        if isinstance(statement, ast.If):
            blackwell = _is_blackwell_test(statement.test)
            then_key = f"{prefix}_sm100" if blackwell else f"{prefix}_default"
            else_key = f"{prefix}_default" if blackwell else f"{prefix}_sm100"
            for key, branch in ((then_key, statement.body), (else_key, statement.orelse)):
                spliced: list[str] = []
                if names := _returned_backends(branch, spliced):
                    priorities[key] = names
                    conditional[key] = spliced
        elif isinstance(statement, ast.Return) and isinstance(statement.value, ast.List):
            priorities[f"{prefix}_default"] = attribute_names(statement.value.elts)
