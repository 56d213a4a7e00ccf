"""unbounded-cache: a module- or class-level buffer dict keyed by shape or size, only added to.

A workspace cache that lives as long as the process and gains an entry per shape keeps
every shape's tensor alive (batch sizes, sequence lengths under CUDA graphs). It counts as
unbounded only when its key can take unboundedly many values (a shape, a size, a token
count: ``key_names``) and nothing evicts. A dict keyed by device alone holds at most one
entry per GPU, however often a larger request replaces the tensor: bounded. A cache the file
ever deletes from, clears, pops, rebinds or measures with ``len()`` is taken as managed.
"""

from __future__ import annotations

import ast
import re

from bot.review.config import UnboundedCacheRules
from bot.review.source import Flag, ReviewedFile, dotted, identifier, self_attribute

PATTERN = "unbounded-cache"
_DICT_FACTORIES = {"dict", "defaultdict", "OrderedDict", "collections.defaultdict"}
_REMOVING_METHODS = {"pop", "popitem", "clear"}


def _is_empty_dict(value: ast.AST | None) -> bool:
    if isinstance(value, ast.Dict) and not value.keys:
        return True
    return (
        isinstance(value, ast.Call)
        and dotted(value.func) in _DICT_FACTORIES
        and not (dotted(value.func) == "dict" and (value.args or value.keywords))
    )


def _definitions(reviewed: ReviewedFile) -> dict[str, ast.AST]:
    """Module- and class-level empty dicts by name (class ones as ``Class.name``)."""
    found: dict[str, ast.AST] = {}
    scopes: list[tuple[str, list[ast.stmt]]] = [("", reviewed.tree.body)]
    scopes += [(f"{c.name}.", c.body) for c in reviewed.nodes(ast.ClassDef)]
    for prefix, body in scopes:
        for statement in body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            elif isinstance(statement, ast.AnnAssign):
                target, value = statement.target, statement.value
            else:
                continue
            if isinstance(target, ast.Name) and _is_empty_dict(value):
                found[prefix + target.id] = statement
    return found


def _container(reviewed: ReviewedFile, node: ast.AST, names: dict[str, ast.AST]) -> str | None:
    """Which defined cache ``node`` (the ``x`` of ``x[k]`` or ``x.pop``) refers to."""
    if isinstance(node, ast.Name) and node.id in names:
        return node.id
    klass = reviewed.class_of(node)
    attribute = self_attribute(node)
    if attribute and klass is not None and f"{klass.name}.{attribute}" in names:
        return f"{klass.name}.{attribute}"
    spelled = dotted(node)
    return spelled if spelled in names else None


def _annotated_key(annotation: ast.AST | None) -> ast.AST | None:
    """``torch.device`` of ``dict[torch.device, torch.Tensor]``."""
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple):
        return annotation.slice.elts[0] if annotation.slice.elts else None
    return None


def _allocates(value: ast.AST | None, allocators: set[str]) -> bool:
    """A stored value that is a freshly sized buffer (``torch.empty(n, ...)``).

    Memoised constants (``torch.tensor(TABLE, device=d)``, a Hadamard matrix) are small and
    bounded by the key; a sized allocation per device or shape is what grows.
    """
    if not isinstance(value, ast.Call) or (identifier(value.func) or "") not in allocators:
        return False
    # torch.ones(1, device=d) or torch.zeros(1, HEAD): a fixed size is a constant, not a
    # buffer that grows with what the key stands for.
    sizes = value.args[:1] if identifier(value.func) == "full" else value.args
    return any(not _fixed_size(size) for size in sizes)


def _fixed_size(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id.isupper() or node.id.lstrip("_").isupper()
    if isinstance(node, ast.Tuple | ast.List):
        return all(_fixed_size(e) for e in node.elts)
    return False


def _local_values(reviewed: ReviewedFile, stores: list[tuple[ast.AST, ast.AST]]) -> list[ast.AST]:
    """What a key held in a local name was built from: ``key = (num_tokens, hidden)``."""
    wanted = {
        (reviewed.function_of(store), key.id) for store, key in stores if isinstance(key, ast.Name)
    }
    if not wanted:
        return []
    return [
        node.value
        for node in reviewed.nodes(ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and (reviewed.function_of(node), target.id) in wanted
    ]


def find(reviewed: ReviewedFile, rules: UnboundedCacheRules) -> list[Flag]:
    names = _definitions(reviewed)
    if not names:
        return []
    keyed = re.compile(rules.key_names)
    allocators = set(rules.allocators)
    stores: dict[str, list[tuple[ast.AST, ast.AST]]] = {}  # name -> [(statement, key)]
    holds_buffers: set[str] = set()
    managed: set[str] = set()
    for node in reviewed.nodes(ast.Subscript):
        name = _container(reviewed, node.value, names)
        if name is None:
            continue
        if isinstance(node.ctx, ast.Store):
            stores.setdefault(name, []).append((node, node.slice))
            if _allocates(reviewed.stored_value(node), allocators):
                holds_buffers.add(name)
        elif isinstance(node.ctx, ast.Del):
            managed.add(name)
    for call in reviewed.nodes(ast.Call):
        func = call.func
        if isinstance(func, ast.Attribute):
            name = _container(reviewed, func.value, names)
            if name and func.attr in _REMOVING_METHODS:
                managed.add(name)
            elif name and func.attr == "setdefault" and call.args:
                stores.setdefault(name, []).append((call, call.args[0]))
                if len(call.args) > 1 and _allocates(call.args[1], allocators):
                    holds_buffers.add(name)
        elif isinstance(func, ast.Name) and func.id == "len" and call.args:
            name = _container(reviewed, call.args[0], names)
            if name:
                managed.add(name)
    for node in reviewed.nodes(ast.Assign, ast.AnnAssign):
        if reviewed.function_of(node) is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            name = _container(reviewed, target, names)
            if name:
                managed.add(name)  # rebound inside a function: reset somewhere
    flags = []
    for name, definition in names.items():
        if name in managed or name not in stores:
            continue
        if name not in holds_buffers:
            continue  # memoised constants or flags: small, and bounded by their key
        keys = [key for _, key in stores[name]]
        keys += _local_values(reviewed, stores[name])
        key_type = _annotated_key(getattr(definition, "annotation", None))
        if key_type is not None:
            keys.append(key_type)
        key_words = [
            identifier(n) or ""
            for key in keys
            for n in reviewed.descendants(key)
            if isinstance(n, ast.Name | ast.Attribute)
        ]
        unbounded = list(dict.fromkeys(w for w in key_words if keyed.search(w)))
        if not unbounded:
            continue  # keyed by device (one entry per GPU) or by constants: bounded
        line = reviewed.first_changed([definition.lineno, *(s.lineno for s, _ in stores[name])])
        why = (
            f"{name} is a process-lifetime dict of allocated buffers keyed by "
            f"{', '.join(unbounded[:3])}, which can take unboundedly many values, and this "
            "file never deletes, pops or clears an entry"
        )
        flag = reviewed.flag(PATTERN, line, why)
        if flag:
            flags.append(flag)
    return flags
