"""What one attention-backend class declares it supports, read from its syntax tree.

The semantics follow vLLM's own doc generator (``tools/pre_commit/
generate_attention_backend_docs.py``): only what the class itself declares counts, a
missing declaration means the base class default, and the first readable ``return [...]``
of a well-known method is its answer. Where the source says something neither reader can
follow (a computed list, an unannotated class variable) we keep the default, as vLLM's
generator does, and add a warning naming the file and line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from bot.gendocs.source import (
    SourceTree,
    class_method,
    class_path_file,
    first_base_name,
    module_path,
    source_line,
)

DTYPE_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
ATTENTION_TYPE_LABELS = {
    "DECODER": "Decoder",
    "ENCODER": "Encoder",
    "ENCODER_ONLY": "Encoder Only",
    "ENCODER_DECODER": "Enc-Dec",
}
# Parents that make a backend an MLA backend even without ``is_mla()``.
MLA_PARENTS = {"MLACommonBackend", "FlashMLABackend", "FlashMLASparseBackend"}
# Backends that are not CUDA backends show "N/A" as compute capability.
NON_CUDA_PREFIXES = ("CPU_", "ROCM_")
# KV-cache dtype aliases a backend lists but the doc leaves out (fp8 means fp8_ds_mla there).
KV_DTYPE_EXCLUDES = {"FLASHMLA_SPARSE": {"fp8"}}


@dataclass
class BackendInfo:
    """One row of a feature table, before formatting. Lists are shown comma-joined."""

    name: str
    path: str
    class_name: str
    line: int
    dtypes: list[str]
    kv_dtypes: list[str]
    block_sizes: list[str]  # empty: any
    head_sizes: list[str]  # empty: any
    attention_types: str
    compute_capability: str
    is_mla: bool
    sink: bool
    non_causal: bool
    sparse: bool
    mm_prefix: bool
    dcp: bool
    version: str = ""
    sort_order: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def row_key(self) -> str:
        return f"{self.name} {self.version}".strip()


class ClassReader:
    """Reads one backend class; warnings go to the shared :class:`SourceTree`."""

    def __init__(self, source: SourceTree, path: str, tree: ast.Module, node: ast.ClassDef):
        self.source, self.path, self.tree, self.node = source, path, tree, node
        self.text = source.read(path)

    def warn(self, node: ast.AST, what: str) -> None:
        code = source_line(self.text, node)
        detail = f" ({code})" if code else ""
        self.source.warn(
            self.path,
            f"{self.node.name}: {what}{detail}; the doc shows the default",
            getattr(node, "lineno", None),
        )

    def class_list(self, name: str) -> list[str] | None:
        """An annotated class-level list, e.g. ``supported_dtypes: ClassVar[...] = [...]``."""
        for item in self.node.body:
            if isinstance(item, ast.AnnAssign) and _target_is(item.target, name):
                if isinstance(item.value, ast.List):
                    out = []
                    for element in item.value.elts:
                        if isinstance(element, ast.Attribute):
                            out.append(element.attr)
                        elif isinstance(element, ast.Constant):
                            out.append(str(element.value))
                    return out
                if item.value is not None:
                    self.warn(item, f"{name} is not a literal list")
            elif isinstance(item, ast.Assign) and any(_target_is(t, name) for t in item.targets):
                self.warn(item, f"{name} is assigned without a type annotation")
        return None

    def returned_list(self, method_name: str, multiple_of: bool = False) -> list[str]:
        """The first non-empty literal list a method returns, as display strings."""
        method = class_method(self.node, method_name)
        if method is None:
            return []
        for node in ast.walk(method):
            if not (isinstance(node, ast.Return) and isinstance(node.value, ast.List)):
                continue
            values = []
            for element in node.value.elts:
                if isinstance(element, ast.Constant):
                    values.append(str(element.value))
                elif multiple_of and _is_multiple_of(element):
                    values.append(f"%{element.args[0].value}")
            if values:
                return values
        if _returns_computed(method, ast.List):
            self.warn(method, f"{method_name}() returns a computed value, not a literal list")
        return []

    def returns_true(self, method_name: str) -> bool:
        method = class_method(self.node, method_name)
        if method is None:
            return False
        return any(
            isinstance(n, ast.Return)
            and isinstance(n.value, ast.Constant)
            and n.value.value is True
            for n in ast.walk(method)
        )

    def dtypes(self) -> list[str]:
        listed = self.class_list("supported_dtypes")
        if listed is None:
            return ["fp16", "bf16"]
        return [DTYPE_SHORT.get(d, d) for d in listed]

    def kv_dtypes(self) -> list[str]:
        listed = self.class_list("supported_kv_cache_dtypes")
        if listed:
            return listed
        method = class_method(self.node, "supports_kv_cache_dtype")
        if method is None:
            return ["auto"]
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], ast.In)
                and len(node.comparators) == 1
                and isinstance(node.comparators[0], ast.List)
            ):
                found = [
                    e.value
                    for e in node.comparators[0].elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
                if found:
                    return found
        self.warn(method, "supports_kv_cache_dtype() tests no literal list")
        return ["auto"]

    def compute_capability(self) -> str:
        method = class_method(self.node, "supports_compute_capability")
        if method is None:
            return "Any"
        lowest: tuple[int, int] | None = None
        highest: tuple[int, int] | None = None
        majors: list[int] = []
        for node in ast.walk(method):
            if not isinstance(node, ast.Compare):
                continue
            for op, right in zip(node.ops, node.comparators, strict=False):
                capability = _device_capability(right)
                if capability is None:
                    continue
                if isinstance(op, ast.GtE):
                    lowest = capability
                elif isinstance(op, ast.LtE):
                    highest = capability
            if (
                isinstance(node.left, ast.Attribute)
                and node.left.attr == "major"
                and len(node.ops) == 1
                and len(node.comparators) == 1
            ):
                right = node.comparators[0]
                if isinstance(node.ops[0], ast.Eq) and isinstance(right, ast.Constant):
                    majors.append(right.value)
                elif isinstance(node.ops[0], ast.In) and isinstance(right, ast.List):
                    majors.extend(
                        e.value
                        for e in right.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, int)
                    )
        if majors:
            majors.sort()
            if len(majors) == 1:
                return f"{majors[0]}.x"
            if majors == list(range(majors[0], majors[-1] + 1)):
                return f"{majors[0]}.x-{majors[-1]}.x"
            return ", ".join(f"{major}.x" for major in majors)  # e.g. 10.x, 12.x (no 11)
        if lowest:
            return f"{lowest[0]}.x-{highest[0]}.x" if highest else f"≥{lowest[0]}.{lowest[1]}"
        if _returns_computed(method, ast.Constant):
            self.warn(method, "supports_compute_capability() tests no readable capability")
        return "Any"

    def attention_types(self) -> str:
        method = class_method(self.node, "supports_attn_type")
        if method is None:
            return "Decoder"
        found: set[str] = set()
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], ast.In)
                and len(node.comparators) == 1
                and isinstance(node.comparators[0], ast.Tuple | ast.Set)
            ):
                for element in node.comparators[0].elts:
                    if isinstance(element, ast.Attribute) and element.attr in ATTENTION_TYPE_LABELS:
                        found.add(ATTENTION_TYPE_LABELS[element.attr])
        if not found:
            return "Decoder"
        if found >= set(ATTENTION_TYPE_LABELS.values()):
            return "All"
        return ", ".join(sorted(found))

    def impl_class_name(self) -> str | None:
        method = class_method(self.node, "get_impl_cls")
        if method is None:
            return None
        for node in ast.walk(method):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
                return node.value.id
        return None


def _returns_computed(method: ast.FunctionDef, literal: type[ast.expr]) -> bool:
    """True when some ``return`` in the method gives something other than a ``literal``."""
    return any(
        isinstance(n, ast.Return) and n.value is not None and not isinstance(n.value, literal)
        for n in ast.walk(method)
    )


def _target_is(target: ast.expr, name: str) -> bool:
    return isinstance(target, ast.Name) and target.id == name


def _is_multiple_of(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "MultipleOf"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
    )


def _device_capability(node: ast.expr) -> tuple[int, int] | None:
    """``DeviceCapability(9, 0)`` -> (9, 0)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "DeviceCapability"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return None
    minor = 0
    if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
        minor = node.args[1].value
    return node.args[0].value, minor


def inherited_bool(
    source: SourceTree,
    path: str,
    tree: ast.Module,
    class_name: str,
    attribute: str,
    seen: set[str] | None = None,
) -> bool:
    """A boolean class attribute, looked up through the first base, across files."""
    seen = seen if seen is not None else set()
    if class_name in seen:
        return False
    seen.add(class_name)
    node = source.find_class(tree, class_name)
    if node is None:
        return False
    for item in node.body:
        value = None
        if isinstance(item, ast.AnnAssign) and _target_is(item.target, attribute):
            value = item.value
        elif isinstance(item, ast.Assign) and any(_target_is(t, attribute) for t in item.targets):
            value = item.value
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            return value.value
    parent = first_base_name(node)
    if parent is None:
        return False
    if source.find_class(tree, parent) is not None:
        return inherited_bool(source, path, tree, parent, attribute, seen)
    parent_path = _imported_from(source, tree, parent, path)
    if parent_path is None:
        return False
    parent_tree = source.parse(parent_path, required=False)
    if parent_tree is None:
        return False
    return inherited_bool(source, parent_path, parent_tree, parent, attribute, seen)


def _imported_from(source: SourceTree, tree: ast.Module, name: str, path: str) -> str | None:
    """The file a ``from X import name`` in ``tree`` points to, if it is in the tree."""
    for node in source.import_froms(tree):
        if not node.module:
            continue
        if not any((alias.asname or alias.name) == name for alias in node.names):
            continue
        if node.level:
            parts = path.split("/")[:-1]
            parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
            candidate = "/".join([*parts, module_path(node.module)])
        else:
            candidate = module_path(node.module)
        if source.exists(candidate):
            return candidate
    return None


def factory_call(tree: ast.Module, name: str) -> str | None:
    """The callee when module-level ``name = callee(...)`` builds the class, else None."""
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
            continue
        if not any(_target_is(t, name) for t in statement.targets):
            continue
        func = statement.value.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return None


def read_backend(
    source: SourceTree, name: str, class_path: str, factory_built: list[str] | None = None
) -> BackendInfo | None:
    """The feature row of one registered backend, or None if it has none.

    None with a problem when unreadable; None with an entry in ``factory_built`` when a
    factory call builds the class (such a backend has no row).
    """
    path, class_name = class_path_file(class_path)
    tree = source.parse(path, required=False)
    if tree is None:
        if not source.exists(path):
            source.report(
                "vllm/v1/attention/backends/registry.py",
                f"backend {name} points to {class_path}, but {path} does not exist",
            )
        return None
    node = source.find_class(tree, class_name)
    if node is None:
        factory = factory_call(tree, class_name)
        if factory is not None:
            # `Name = create_composite_attention_backend(A, B, ...)` builds the class at
            # import time; it has no body to read, and vLLM's generator gives it no row.
            if factory_built is not None:
                factory_built.append(f"{name} ({class_name} = {factory}(...) in {path})")
            return None
        source.report(path, f"backend {name}: class {class_name} is not defined here")
        return None
    reader = ClassReader(source, path, tree, node)
    is_mla = (
        first_base_name(node) in MLA_PARENTS
        or ".mla." in class_path.lower()
        or "_mla" in name.lower()
        or reader.returns_true("is_mla")
    )
    impl = reader.impl_class_name()
    dcp = bool(impl) and inherited_bool(source, path, tree, impl, "can_return_lse_for_decode")
    kv = [d for d in reader.kv_dtypes() if d not in KV_DTYPE_EXCLUDES.get(name, set())]
    return BackendInfo(
        name=name,
        path=path,
        class_name=class_name,
        line=node.lineno,
        dtypes=reader.dtypes(),
        kv_dtypes=kv,
        block_sizes=reader.returned_list("get_supported_kernel_block_sizes", multiple_of=True),
        head_sizes=reader.returned_list("get_supported_head_sizes"),
        attention_types=reader.attention_types(),
        compute_capability=(
            "N/A" if name.startswith(NON_CUDA_PREFIXES) else reader.compute_capability()
        ),
        is_mla=is_mla,
        sink=reader.returns_true("supports_sink"),
        non_causal=reader.returns_true("supports_non_causal"),
        sparse=reader.returns_true("is_sparse"),
        mm_prefix=reader.returns_true("supports_mm_prefix"),
        dcp=dcp,
    )
