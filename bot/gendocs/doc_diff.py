"""A committed doc against its generator's output, cell by cell, in whatever layout it has.

The generator of each release decides the columns and tables, so nothing here assumes a
layout: every Markdown table of both texts is found, named (by the template's region when
it sits where the template puts one, else by the headings above it), and compared cell by
cell; the text around the tables is compared line by line. The same readers compare the
extractor's tables with the generator's, to log where prbot's extractor falls behind.
"""

from __future__ import annotations

import difflib
import re

from bot.gendocs.render import layout
from bot.gendocs.tables import (
    ABSENT,
    MISSING,
    CellDiff,
    Table,
    compare_tables,
    find_region,
    parse_table,
    parse_text_table,
)

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BOLD_TITLE = re.compile(r"^\*\*(.*):\*\*$")
# Text differences listed per doc; the patch carries all of them.
MAX_TEXT_CELLS = 20
# Line diffs cost up to quadratic time: past this many lines outside the tables, one cell
# says the text differs instead of locating each line.
MAX_TEXT_LINES = 5000


def doc_tables(text: str, template: str) -> dict[str, Table]:
    """Every table of a doc, keyed by template region (when it is one) or by headings."""
    lines = text.split("\n")
    named: dict[int, str] = {}
    for key, anchors in layout(template).regions.items():
        region = find_region(lines, key, anchors)
        if region.table is not None:
            named.setdefault(region.table.start, key)
    tables: dict[str, Table] = {}
    headings: list[str] = []
    title = ""
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if heading := _HEADING.match(line):
            level = len(heading.group(1))
            headings = [*headings[: level - 1], heading.group(2).strip()]
            title = ""
        elif bold := _BOLD_TITLE.match(line):
            title = bold.group(1).strip()
        elif line.startswith("|"):
            key = named.get(index) or " / ".join([*headings, *([title] if title else [])])
            key = key or "(top)"
            unique, count = key, 2
            while unique in tables:
                unique, count = f"{key} #{count}", count + 1
            table = parse_table(lines, index, unique)
            tables[unique] = table
            index = table.end
            continue
        index += 1
    return tables


def _masked(text: str, tables: dict[str, Table]) -> list[str]:
    lines = text.split("\n")
    for key, table in sorted(tables.items(), key=lambda item: -item[1].start):
        lines[table.start : table.end] = [f"<table {key}>"]
    return lines


def explain(expected: str, actual: str, template: str) -> list[CellDiff]:
    """Why ``actual`` (the committed doc) is not ``expected`` (the generator's output)."""
    if expected == actual:
        return []
    want, have = doc_tables(expected, template), doc_tables(actual, template)
    cells: list[CellDiff] = []
    for key, table in want.items():
        if key in have:
            cells.extend(compare_tables(table, have[key]))
        else:
            cells.append(CellDiff(key, "(table)", "(table)", "present", MISSING, "table"))
    for key in have:
        if key not in want:
            cells.append(CellDiff(key, "(table)", "(table)", ABSENT, "present", "table"))
    cells.extend(text_cells(_masked(expected, want), _masked(actual, have)))
    if not cells:
        # Same tables and words, other bytes (spacing, line ends): still not what it generates.
        cells.append(CellDiff("(text)", "(whitespace)", "text", "as generated", "differs", "text"))
    return cells


def text_cells(expected: list[str], actual: list[str]) -> list[CellDiff]:
    """Lines outside the tables that differ (actual line numbers)."""
    if max(len(expected), len(actual)) > MAX_TEXT_LINES:
        if expected == actual:
            return []
        what = f"differs ({len(actual)} lines; too long to compare line by line)"
        return [CellDiff("(text)", "(text)", "text", "as generated", what, "text")]
    cells: list[CellDiff] = []
    matcher = difflib.SequenceMatcher(a=actual, b=expected, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for offset in range(max(a1 - a0, b1 - b0)):
            have = actual[a0 + offset] if a0 + offset < a1 else ABSENT
            want = expected[b0 + offset] if b0 + offset < b1 else ABSENT
            cells.append(CellDiff("(text)", f"line {a0 + offset + 1}", "text", want, have, "text"))
            if len(cells) >= MAX_TEXT_CELLS:
                return cells
    return cells


def _block_table_lines(blocks: dict[str, str], template: str) -> dict[str, list[str]]:
    parts = layout(template).blocks
    out: dict[str, list[str]] = {}
    for block, content in blocks.items():
        lines = content.split("\n")
        names = [key for key, _ in parts.get(block, [])]
        position, index = 0, 0
        while index < len(lines):
            if not lines[index].lstrip().startswith("|"):
                index += 1
                continue
            end = index
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            key = names[position] if position < len(names) else f"{block}#{position + 1}"
            out[key] = lines[index:end]
            position, index = position + 1, end
    return out


def block_tables(blocks: dict[str, str], template: str) -> dict[str, Table]:
    """Tables of marker blocks, named by the template's table keys (``{block}#N`` else)."""
    return {
        key: parse_table(lines, 0, key)
        for key, lines in _block_table_lines(blocks, template).items()
    }


def block_table_texts(blocks: dict[str, str], template: str) -> dict[str, str]:
    """The same tables as Markdown text, for the preview of what a PR changes."""
    return {key: "\n".join(lines) for key, lines in _block_table_lines(blocks, template).items()}


def extractor_disagreements(
    generated: dict[str, Table], extracted: dict[str, str]
) -> list[CellDiff]:
    """Cells where prbot's extractor says other than the generator, on the generator's cells.

    Columns the extractor knows and this generator does not show are not compared: the
    layout is the generator's; every cell it shows must come out the same.
    """
    cells: list[CellDiff] = []
    for key, table in generated.items():
        if key not in extracted:
            if table.rows:
                cells.append(CellDiff(key, "(table)", "(table)", "present", MISSING, "table"))
            continue
        ours = parse_text_table(extracted[key], key)
        for diff in compare_tables(table, ours):
            if diff.kind == "header" and diff.expected == ABSENT:
                continue  # a column only the extractor has
            if diff.kind == "extra_row" and diff.column not in table.header:
                continue
            cells.append(diff)
    return cells
