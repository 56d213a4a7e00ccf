"""Rendering the attention-backend model through the Jinja2 table templates.

The templates (``templates/gendocs/``) own the presentation: columns, symbols, footnote
markers, row order, and where each table sits in a committed doc or which marker it fills.
This module only picks the rows each table takes and hands them over. Output is Markdown
for a file in the target repository, so nothing is escaped here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateNotFound

from bot.core.paths import templates_dir
from bot.gendocs.attention_sources import AttentionModel

DEFAULT_TEMPLATE = "gendocs/attention_backends.md.j2"


class TemplateError(ValueError):
    """A table template that is missing or does not define what the renderer needs."""


@cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        autoescape=False,  # Markdown written into the target repository, not a comment
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        extensions=["jinja2.ext.do"],
    )
    env.filters["dashes"] = lambda text: "-" * len(text)
    return env


@dataclass(frozen=True)
class Layout:
    """Where tables live: anchors for committed docs, marker blocks for marker docs."""

    regions: dict[str, list[str]]
    blocks: dict[str, list[tuple[str, str]]]
    tables: dict[str, dict[str, Any]]


@cache
def _module(template: str) -> Any:
    try:
        module = _environment().get_template(template).module
    except TemplateNotFound:
        raise TemplateError(f"table template {template} does not exist") from None
    for name in ("tables", "regions", "blocks", "feature_columns", "table", "symbols"):
        if not hasattr(module, name):
            raise TemplateError(f"table template {template} does not define {name!r}")
    return module


def layout(template: str = DEFAULT_TEMPLATE) -> Layout:
    module = _module(template)
    blocks = {key: [(t, title) for t, title in parts] for key, parts in module.blocks.items()}
    return Layout(dict(module.regions), blocks, dict(module.tables))


def _row_group(backend: Any) -> str:
    """Which feature table a backend row goes to (vLLM's generators from 0.23 on)."""
    if backend.name.endswith("_DSV4"):
        return "mla_v4"
    if backend.is_mla:
        return "mla"
    if backend.name.startswith("MINIMAX"):
        return "minimax"
    return "standard"


def render_tables(
    model: AttentionModel, template: str = DEFAULT_TEMPLATE, *, split_special: bool = False
) -> dict[str, str]:
    """Every table the template defines, as Markdown lines joined by newlines.

    A priority table whose list the source does not have is left out. MiniMax and
    DeepSeek-V4 backends have tables of their own; with ``split_special`` (marker docs,
    whose blocks always exist) those tables are rendered even when empty.
    """
    module = _module(template)
    markers = module.footnote_markers
    out: dict[str, str] = {}
    for key, spec in module.tables.items():
        kind = spec["kind"]
        if kind == "priority":
            names = model.priorities.get(spec["list"])
            if names is None:
                continue
            # A footnote marks a backend whose place the model decides (a spliced list).
            notes = markers["priority"].get(spec["list"], {})
            spliced = set(model.conditional.get(spec["list"], []))
            rows = [
                {
                    "rank": rank,
                    "name": name,
                    "marker": notes.get(name, "") if name in spliced else "",
                }
                for rank, name in enumerate(names, 1)
            ]
            out[key] = str(module.table(module.priority_columns, rows))
        elif kind == "prefill":
            rows = [
                {
                    **dataclasses.asdict(row),
                    "marker": markers["prefill_blackwell_default"]
                    if row.default_on_blackwell
                    else "",
                }
                for row in model.prefill
            ]
            columns = module.prefill_columns
            if model.prefill_layout == "legacy":
                columns = getattr(module, "prefill_legacy_columns", columns)
            out[key] = str(module.table(columns, rows))
        elif kind == "feature":
            chosen = [b for b in model.backends if _row_group(b) == spec["rows"]]
            if not split_special and spec["rows"] in ("minimax", "mla_v4") and not chosen:
                continue  # a committed doc has these sections only when they have rows
            chosen.sort(key=lambda b: (b.name, b.sort_order))
            options = {"versions": any(b.version for b in chosen), "mla": spec["mla"]}
            columns = [c for c in module.feature_columns if options.get(c.get("when"), True)]
            rows = [{**dataclasses.asdict(b), "marker": ""} for b in chosen]
            out[key] = str(module.table(columns, rows))
        else:
            raise TemplateError(f"table template {template}: {key} has unknown kind {kind!r}")
    return out


def render_block(key: str, tables: dict[str, str], template: str = DEFAULT_TEMPLATE) -> str | None:
    """The content that fills ``--8<-- "gen:KEY"``, or None when the template has no such block."""
    parts = layout(template).blocks.get(key)
    if parts is None:
        return None
    pieces = []
    for table_key, title in parts:
        if table_key not in tables:
            continue
        pieces.append(f"{title}\n\n{tables[table_key]}" if title else tables[table_key])
    return "\n\n".join(pieces)
