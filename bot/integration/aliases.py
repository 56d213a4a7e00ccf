"""Names a repository uses for a registry member in its own tables (a benchmark runner's).

vLLM's MLA benchmark configs say ``fa2``/``fa3``/``fa4`` and ``trtllm``, not ``FLASH_ATTN``
and ``TRTLLM_RAGGED``; ``benchmarks/attention_benchmarks/mla_runner.py`` maps them, in dict
literals such as ``{"trtllm": {"mla_prefill_backend_enum": "TRTLLM_RAGGED"}}`` or
``{"fa2": "FlashAttnPrefillBackend"}``. A key is an alias of a member when its value names
the member, or the class the member's registry entry points to.
"""

from __future__ import annotations

import ast

from bot.core.limits import MAX_AST_NODES, InputRejected, parse_python, walk
from bot.integration.entries import dotted


def _names_in(node: ast.AST, path: str, budget: list[int]) -> set[str]:
    names: set[str] = set()
    for child in walk(node, path, limit=budget[0]):
        budget[0] -= 1
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            names.add(child.value)
        elif isinstance(child, ast.Attribute | ast.Name):
            chain = dotted(child)
            if chain:
                names.add(chain.rsplit(".", 1)[-1])
    if budget[0] <= 0:
        raise InputRejected(path, f"has over {MAX_AST_NODES:,} syntax nodes in name tables")
    return names


def name_tables(path: str, text: str) -> list[tuple[str, frozenset[str]]]:
    """(key, names its value holds) for every entry of every table of names in ``text``:
    dict literals keyed by strings, not counting the dicts that are their entries' settings.
    Raises :class:`~bot.core.limits.InputRejected`."""
    tree = parse_python(text, path)
    rows: list[tuple[str, frozenset[str]]] = []
    budget = [MAX_AST_NODES]
    inner: set[int] = set()  # the per-entry settings of a table, not a table of names
    for node in walk(tree, path):
        if not isinstance(node, ast.Dict) or not node.keys or id(node) in inner:
            continue
        keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
        if not all(isinstance(k, str) for k in keys):
            continue
        inner.update(id(value) for value in node.values if isinstance(value, ast.Dict))
        for key, value in zip(keys, node.values, strict=True):
            rows.append((key, frozenset(_names_in(value, path, budget))))
    return rows


def aliases_from_tables(
    tables: list[tuple[str, frozenset[str]]], symbol: str, stands_for: set[str]
) -> set[str]:
    """The keys whose values name ``symbol`` (or anything in ``stands_for``)."""
    return {key for key, names in tables if key != symbol and names & stands_for}


def aliases_in_source(path: str, text: str, targets: dict[str, set[str]]) -> dict[str, set[str]]:
    """For each symbol of ``targets`` (symbol -> the names that stand for it), the dict keys
    in ``text`` whose values name it. Raises :class:`~bot.core.limits.InputRejected`."""
    tables = name_tables(path, text)
    return {symbol: aliases_from_tables(tables, symbol, names) for symbol, names in targets.items()}
