"""Markdown tables as data: splitting rows, finding regions, comparing cell by cell."""

from bot.gendocs.tables import (
    compare_tables,
    find_region,
    parse_table,
    parse_text_table,
    split_row,
)

TABLE = """| Backend | Version | Sink |
| ------- | ------- | ---- |
| `A` | | ✅ |
| `B` | v1* | ❌ |
| `B` | v2* | ✅ |"""


def test_split_row_keeps_empty_cells_and_escaped_pipes():
    assert split_row("| `A` | | x \\| y |") == ["`A`", "", "x \\| y"]


def test_rows_are_named_by_backend_and_version():
    table = parse_text_table(TABLE, "t")
    assert table.header == ["Backend", "Version", "Sink"]
    assert table.labels() == ["A", "B v1*", "B v2*"]
    assert table.broken == []


def test_identical_tables_have_no_differences():
    assert compare_tables(parse_text_table(TABLE, "t"), parse_text_table(TABLE, "t")) == []


def test_a_changed_cell_is_named_by_row_and_column():
    actual = parse_text_table(TABLE.replace("| v2* | ✅ |", "| v2* | ❌ |"), "t")
    [diff] = compare_tables(parse_text_table(TABLE, "t"), actual)
    assert (diff.table, diff.row, diff.column, diff.expected, diff.actual) == (
        "t",
        "B v2*",
        "Sink",
        "✅",
        "❌",
    )


def test_missing_extra_and_moved_rows():
    lines = TABLE.split("\n")
    actual = parse_text_table("\n".join([lines[0], lines[1], lines[4], lines[3], "| `C` | | ✅ |"]))
    kinds = {(d.kind, d.row) for d in compare_tables(parse_text_table(TABLE, "t"), actual)}
    assert ("missing_row", "A") in kinds
    assert ("extra_row", "C") in kinds
    assert ("order", "B v2*") in kinds


def test_header_change_and_broken_row_are_reported():
    actual = parse_text_table(
        "| Backend | Version | Sink | New |\n| - | - | - | - |\n| `A` | | ✅ |", "t"
    )
    diffs = compare_tables(parse_text_table(TABLE, "t"), actual)
    assert any(d.kind == "header" and d.column == "New" for d in diffs)
    assert any(d.kind == "broken" and "3 cells" in d.actual for d in diffs)


def test_region_follows_its_anchors_and_stops_at_the_next_title():
    doc = [
        "## Priority",
        "### Standard",
        "**Blackwell:**",
        "",
        "**Hopper:**",
        "",
        "| Priority | Backend |",
        "| --- | --- |",
        "| 1 | `A` |",
        "### MLA",
        "**Blackwell:**",
        "",
        "| Priority | Backend |",
    ]
    missing = find_region(doc, "std-bw", ["## Priority", "### Standard", "**Blackwell:**"])
    assert missing.table is None and missing.anchor_line == 2
    hopper = find_region(doc, "std-h", ["## Priority", "### Standard", "**Hopper:**"])
    assert hopper.table is not None and hopper.table.start == 6 and hopper.table.end == 9
    # "**Hopper:**" exists only under "### Standard"; the MLA section has none.
    gone = find_region(doc, "mla-h", ["## Priority", "### MLA", "**Hopper:**"])
    assert gone.missing_anchor == "**Hopper:**"


def test_parse_table_flags_a_missing_separator():
    table = parse_table(["| A | B |", "| 1 | 2 |"], 0, "t")
    assert table.broken and "separator" in table.broken[0][1]
