"""Markdown tables as data: find them in a doc, split them into cells, compare cell by cell.

Expected tables (rendered from source) and actual tables (read from the doc) go through the
same parser, so a difference is always a difference in what a reader sees, row by row and
column by column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_CODE = re.compile(r"`([^`]*)`")
_HEADING = re.compile(r"^(#{1,6})\s")
_BOLD_TITLE = re.compile(r"^\*\*.*:\*\*$")

# Columns that, together, name a row ("FLASH_ATTN FA3*").
KEY_COLUMNS = ("Backend", "Version")


@dataclass
class Table:
    """One Markdown table: header cells, rows of cells, and where it sits in its doc."""

    key: str
    header: list[str]
    rows: list[list[str]]
    start: int = -1  # index of the header line in the doc's lines; -1 when rendered
    end: int = -1  # index after the last table line
    broken: list[tuple[int, str]] = field(default_factory=list)  # (doc line, problem)

    def labels(self) -> list[str]:
        """A readable, unique name for every row, e.g. ``FLASH_ATTN FA3*``."""
        positions = [self.header.index(c) for c in KEY_COLUMNS if c in self.header]
        if not positions:
            positions = [0]
        seen: dict[str, int] = {}
        out = []
        for row in self.rows:
            parts = [_label_part(row[i]) if i < len(row) else "" for i in positions]
            label = " ".join(p for p in parts if p) or "(empty)"
            seen[label] = seen.get(label, 0) + 1
            out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
        return out


def _label_part(cell: str) -> str:
    match = _CODE.search(cell)
    return match.group(1) if match else cell.strip()


def split_row(line: str) -> list[str]:
    """Cells of one table line, stripped; ``\\|`` stays inside its cell."""
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.strip() for cell in _UNESCAPED_PIPE.split(text)]


def _is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(re.fullmatch(r":?-{1,}:?", c or "") for c in cells)


def parse_table(lines: list[str], start: int, key: str = "") -> Table:
    """The table whose header is ``lines[start]``; rows run until the first non-table line."""
    end = start
    while end < len(lines) and lines[end].lstrip().startswith("|"):
        end += 1
    header = split_row(lines[start])
    table = Table(key=key, header=header, rows=[], start=start, end=end)
    body_start = start + 1
    if body_start < end and _is_separator(split_row(lines[body_start])):
        body_start += 1
    else:
        table.broken.append((start + 2, "the header has no separator line under it"))
    for index in range(body_start, end):
        cells = split_row(lines[index])
        if len(cells) != len(header):
            table.broken.append(
                (index + 1, f"row has {len(cells)} cells, the header has {len(header)}")
            )
        table.rows.append(cells)
    return table


def parse_text_table(text: str, key: str = "") -> Table:
    lines = text.split("\n")
    return parse_table(lines, 0, key)


@dataclass(frozen=True)
class Region:
    """Where a table is (or should be) in a committed doc."""

    key: str
    anchor_line: int  # index of the last anchor line; -1 when an anchor is missing
    missing_anchor: str | None = None
    table: Table | None = None


def find_region(lines: list[str], key: str, anchors: list[str]) -> Region:
    """The first table after the anchors (headings or titles), each found inside the last.

    An anchor heading bounds the search: the next heading of its level or higher ends it.
    A table is only taken before the next heading or bold title line, so a missing table
    is not confused with the one after it.
    """
    position, limit = 0, len(lines)
    for anchor in anchors:
        found = next(
            (i for i in range(position, limit) if lines[i].strip() == anchor.strip()), None
        )
        if found is None:
            return Region(key, -1, missing_anchor=anchor)
        heading = _HEADING.match(anchor)
        if heading:
            level = len(heading.group(1))
            limit = next(
                (
                    i
                    for i in range(found + 1, limit)
                    if (m := _HEADING.match(lines[i])) and len(m.group(1)) <= level
                ),
                limit,
            )
        position = found + 1
    for index in range(position, limit):
        text = lines[index].strip()
        if text.startswith("|"):
            return Region(key, position - 1, table=parse_table(lines, index, key))
        if _HEADING.match(text) or _BOLD_TITLE.match(text):
            break
    return Region(key, position - 1)


@dataclass(frozen=True)
class CellDiff:
    """One difference between the expected and the actual table, as the report shows it."""

    table: str
    row: str
    column: str
    expected: str
    actual: str
    kind: str = "cell"  # cell | missing_row | extra_row | order | header | broken | table

    def to_json(self) -> dict[str, str]:
        return {
            "table": self.table,
            "row": self.row,
            "column": self.column,
            "expected": self.expected,
            "actual": self.actual,
            "kind": self.kind,
        }


MISSING = "(missing)"
ABSENT = "(absent)"


def compare_tables(expected: Table, actual: Table) -> list[CellDiff]:
    """Every difference between two versions of one table, rows named by backend."""
    key = expected.key or actual.key
    diffs: list[CellDiff] = []
    for line, problem in actual.broken:
        diffs.append(CellDiff(key, f"line {line}", "(cells)", "well-formed", problem, "broken"))
    for column in expected.header:
        if column not in actual.header:
            diffs.append(CellDiff(key, "(header)", column, column, MISSING, "header"))
    for column in actual.header:
        if column not in expected.header:
            diffs.append(CellDiff(key, "(header)", column, ABSENT, column, "header"))
    shared = [c for c in expected.header if c in actual.header]
    expected_rows = dict(zip(expected.labels(), expected.rows, strict=True))
    actual_rows = dict(zip(actual.labels(), actual.rows, strict=True))
    for label, row in expected_rows.items():
        if label not in actual_rows:
            # One cell per column, so a reader (and a script) sees what each cell should say.
            for column, value in zip(expected.header, row, strict=False):
                diffs.append(CellDiff(key, label, column, value, MISSING, "missing_row"))
            continue
        other = actual_rows[label]
        for column in shared:
            want = _cell(expected.header, row, column)
            have = _cell(actual.header, other, column)
            if want != have:
                diffs.append(CellDiff(key, label, column, want, have))
    for label, row in actual_rows.items():
        if label not in expected_rows:
            for column, value in zip(actual.header, row, strict=False):
                diffs.append(CellDiff(key, label, column, ABSENT, value, "extra_row"))
    # Priority tables say their order in a column already; elsewhere report moved rows.
    if "Priority" not in expected.header:
        common = [label for label in expected_rows if label in actual_rows]
        actual_order = [label for label in actual_rows if label in expected_rows]
        for position, (want, have) in enumerate(zip(common, actual_order, strict=True), 1):
            if want != have:
                diffs.append(
                    CellDiff(
                        key,
                        have,
                        "(position)",
                        str(common.index(have) + 1),
                        str(position),
                        "order",
                    )
                )
    return diffs


def _cell(header: list[str], row: list[str], column: str) -> str:
    index = header.index(column)
    return row[index] if index < len(row) else MISSING
