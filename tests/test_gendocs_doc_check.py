"""One committed or marker doc checked against its source (the issue's must-hold cases)."""

from __future__ import annotations

import re
from pathlib import Path

from gendocs_helpers import (
    CUDA,
    DOC,
    NEW_BACKEND_ENTRY,
    NEW_BACKEND_MODULE,
    REGISTRY,
    copy_fixture,
    edit,
)
from github_render import render_gfm

from bot.checks.base import Section, Status
from bot.core.snapshot import DirTree
from bot.gendocs.config import DocRule
from bot.gendocs.doc_check import Expected, check_doc
from bot.report.render import Report, render_markdown

RULE = DocRule(path=DOC)


def check(root: Path):
    result = check_doc(RULE, DirTree(root))
    assert result is not None
    return result


def cells(result) -> set[tuple[str, str, str]]:
    return {(c.table, c.row, c.column) for c in result.cells}


def test_a_tree_whose_doc_matches_its_source_is_in_sync(tmp_path):
    result = check(copy_fixture(tmp_path / "tree"))
    assert result.in_sync and result.cells == [] and result.problems == []
    assert result.expected_text == result.actual_text and result.patch() == ""


def test_a_backend_added_to_the_registry_but_not_the_doc(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, REGISTRY, *NEW_BACKEND_ENTRY)
    (root / NEW_BACKEND_MODULE[0]).write_text(NEW_BACKEND_MODULE[1])
    result = check(root)
    assert not result.in_sync
    assert {(d.table, d.row, d.kind, d.actual) for d in result.cells} == {
        ("table-standard", "TREE_ATTN", "missing_row", "(missing)")
    }
    # Each cell of the missing row is named by its column, with the value it should have.
    cells = {d.column: d.expected for d in result.cells}
    assert cells["Head Sizes"] == "64, 128" and cells["Backend"] == "`TREE_ATTN`"


def test_a_deleted_doc_row(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, DOC, "| `FLASHMLA` | fp16, bf16 | `auto`, `fp8` | 64 |", "| `GONE` | x | y | z |")
    result = check(root)
    kinds = {(c.row, c.kind) for c in result.cells}
    assert ("FLASHMLA", "missing_row") in kinds and ("GONE", "extra_row") in kinds


def test_a_capability_changed_in_a_backend_class(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(
        root,
        "vllm/v1/attention/backends/triton_attn.py",
        "    def supports_sink(cls) -> bool:\n        return True",
        "    def supports_sink(cls) -> bool:\n        return False",
    )
    result = check(root)
    [diff] = result.cells
    assert (diff.table, diff.row, diff.column) == ("table-standard", "TRITON_ATTN", "Sink")
    assert (diff.expected, diff.actual) == ("❌", "✅")


def test_a_hand_edited_doc_cell(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, DOC, "| ✅ | Decoder | 10.x |", "| ✅ | Decoder | 10.x, 12.x |")
    result = check(root)
    assert cells(result) == {("table-standard", "FLASHINFER TRTLLM†", "Compute Cap.")}
    assert result.cells[0].actual == "10.x, 12.x"


def test_a_reordered_priority_list(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(
        root,
        CUDA,
        "return [AttentionBackendEnum.FLASHMLA, AttentionBackendEnum.TRITON_MLA]",
        "return [AttentionBackendEnum.TRITON_MLA, AttentionBackendEnum.FLASHMLA]",
    )
    result = check(root)
    assert cells(result) == {
        ("priority-mla-sm100", "FLASHMLA", "Priority"),
        ("priority-mla-sm100", "TRITON_MLA", "Priority"),
    }


def test_write_then_check_passes_and_touches_only_tables(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, REGISTRY, *NEW_BACKEND_ENTRY)
    (root / NEW_BACKEND_MODULE[0]).write_text(NEW_BACKEND_MODULE[1])
    edit(root, DOC, "| ✅ | Decoder | 10.x |", "| ✅ | Decoder | 12.x |")
    edit(root, CUDA, "AttentionBackendEnum.FLASHMLA]", "AttentionBackendEnum.FLASHMLA, ]")
    before = check(root)
    assert not before.in_sync
    (root / DOC).write_text(before.expected_text)
    after = check(root)
    assert after.in_sync, after.cells
    old_prose = [line for line in before.actual_text.split("\n") if not line.startswith("|")]
    new_prose = [line for line in after.actual_text.split("\n") if not line.startswith("|")]
    assert old_prose == new_prose
    assert "+| `TREE_ATTN` |" in before.patch()


def test_a_table_missing_under_its_title_is_reinserted(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    text = (root / DOC).read_text()
    decode = text[text.index("| Backend | Dtypes | KV Dtypes") :]
    (root / DOC).write_text(text.replace(decode, ""))
    result = check(root)
    assert [(c.table, c.kind) for c in result.cells] == [("table-mla-decode", "table")]
    (root / DOC).write_text(result.expected_text)
    assert check(root).in_sync


def test_a_broken_table_is_named_with_file_and_line(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, DOC, "| 2 | `FLASH_ATTN` |\n", "| 2 `FLASH_ATTN` |\n")
    result = check(root)
    broken = [p for p in result.problems if "broken" in p.message]
    assert broken and broken[0].path == DOC and broken[0].line
    assert any(c.kind == "broken" for c in result.cells)
    (root / DOC).write_text(result.expected_text)
    assert check(root).in_sync


def test_a_doc_whose_table_title_is_gone_says_so(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, DOC, "### Prefill Backends", "### Prefill")
    result = check(root)
    assert not result.in_sync
    assert any("Prefill Backends" in p.message and p.path == DOC for p in result.errors)


def test_a_backend_that_does_not_parse_is_not_called_stale(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, "vllm/v1/attention/backends/flashinfer.py", "class FlashInferBackend:", "class (")
    result = check(root)
    assert not result.in_sync and result.cells == []
    assert [p.path for p in result.errors] == ["vllm/v1/attention/backends/flashinfer.py"]
    # Other drift in the same table is still reported, but no patch drops the unknown rows.
    edit(
        root, DOC, "| ✅ | ❌ | ✅ | ❌ | Decoder | Any |", "| ✅ | ❌ | ✅ | ❌ | Decoder | 8.x |"
    )
    result = check(root)
    assert [(c.row, c.column) for c in result.cells] == [("TRITON_ATTN", "Compute Cap.")]
    assert "| `FLASHINFER` | Native† |" in result.expected_text


def test_prose_edited_without_the_generator_is_a_manual_edit(tmp_path):
    base = copy_fixture(tmp_path / "base")
    head = copy_fixture(tmp_path / "head")
    edit(head, DOC, "Backends are tried in this order.", "Backends are tried in any order.")
    result = check_doc(
        RULE.model_copy(update={"generator": ["tools/gen.py"]}),
        DirTree(head),
        DirTree(base),
        changed_paths=[DOC],
    )
    assert result.cells == [] and not result.in_sync
    [change] = result.manual_edits
    assert change["after"] == "Backends are tried in any order." and change["line"] == 8
    with_generator = check_doc(
        RULE.model_copy(update={"generator": ["tools/gen.py"]}),
        DirTree(head),
        DirTree(base),
        changed_paths=[DOC, "tools/gen.py"],
    )
    assert with_generator.in_sync and with_generator.generator_changed


MARKER_DOC = """# Attention backends

## Standard

--8<-- "gen:table-standard"

## Priority

--8<-- "gen:priority-standard"

--8<-- "gen:priority-mla"

## MLA

--8<-- "gen:table-mla-prefill"

--8<-- "gen:table-mla-decode"
"""


def test_marker_doc_markers_and_blocks_match(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    (root / DOC).write_text(MARKER_DOC)
    result = check(root)
    assert result.mode == "markers" and result.in_sync, result.problems


def test_marker_doc_with_an_unknown_marker_and_a_block_without_marker(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    text = MARKER_DOC.replace('--8<-- "gen:priority-mla"', '--8<-- "gen:table-nonesuch"')
    (root / DOC).write_text(text)
    result = check(root)
    messages = [p.message for p in result.errors]
    assert any('"gen:table-nonesuch" has no generated content' in m for m in messages)
    assert any("block priority-mla has no" in m for m in messages)


def test_marker_doc_previews_what_the_pr_changes(tmp_path):
    base = copy_fixture(tmp_path / "base")
    head = copy_fixture(tmp_path / "head")
    for root in (base, head):
        (root / DOC).write_text(MARKER_DOC)
    edit(head, REGISTRY, *NEW_BACKEND_ENTRY)
    (head / NEW_BACKEND_MODULE[0]).write_text(NEW_BACKEND_MODULE[1])
    edit(head, "vllm/v1/attention/backends/mla/flashmla.py", "return [64]", "return [64, 128]")
    result = check_doc(RULE, DirTree(head), DirTree(base), changed_paths=[REGISTRY])
    assert result.in_sync
    changes = {(p["table"], p["row"], p["column"], p["change"]) for p in result.preview}
    assert ("table-standard", "TREE_ATTN", "Block Sizes", "added") in changes
    assert ("table-mla-decode", "FLASHMLA", "Block Sizes", "changed") in changes
    [block] = [p for p in result.preview if p["row"] == "FLASHMLA" and p["column"] == "Block Sizes"]
    assert (block["before"], block["after"]) == ("64", "64, 128")
    # In the comment: the new backend is one line under "After", the changed cell one line.
    section = Section("generated_docs", Status.PASS, "in sync", [result.to_json()])
    text = render_markdown(Report("o/r", 1, "f" * 40, "e" * 40, [section]))
    assert "could not be rendered" not in text
    [added] = [line for line in text.splitlines() if line.startswith("- `table-standard`")]
    assert added.startswith("- `table-standard` · TREE\\_ATTN: new row: Backend: `TREE_ATTN` ·")
    assert "- `table-mla-decode` · FLASHMLA · Block Sizes: 64 → 64, 128\n" in text


def test_a_glued_line_after_a_table_is_fixed_by_write(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    edit(root, DOC, "| 3 | `TRITON_ATTN` |\n\n**Ampere", "| 3 | `TRITON_ATTN` |\n**Ampere")
    result = check(root)
    assert [c.kind for c in result.cells] == ["layout"]
    (root / DOC).write_text(result.expected_text)
    assert check(root).in_sync
    assert re.search(r"TRITON_ATTN` \|\n\n\*\*Ampere", (root / DOC).read_text())


def test_an_unreadable_backend_still_has_its_priority_and_prefill_rows_checked(tmp_path):
    # Priority tables come from cuda.py and prefill rows from the prefill registry: a decode
    # backend class that does not parse leaves them known, so their drift is still drift.
    root = copy_fixture(tmp_path / "tree")
    edit(root, "vllm/v1/attention/backends/flash_attn.py", "class FlashAttentionBackend", "class (")
    edit(
        root,
        CUDA,
        "AttentionBackendEnum.FLASHINFER,\n                AttentionBackendEnum.FLASH_ATTN,",
        "AttentionBackendEnum.FLASH_ATTN,\n                AttentionBackendEnum.FLASHINFER,",
    )
    edit(root, DOC, "| `FLASH_ATTN` | FlashAttention varlen", "| `FLASH_ATTN` | FlashAttn varlen")
    result = check(root)
    cells = {(c.table, c.row, c.column) for c in result.cells}
    assert ("priority-standard-sm100", "FLASH_ATTN", "Priority") in cells
    assert ("priority-standard-sm100", "FLASHINFER", "Priority") in cells
    assert ("table-mla-prefill", "FLASH_ATTN", "Description") in cells
    assert not any(
        c.table == "table-standard" and c.row.startswith("FLASH_ATTN") for c in result.cells
    )
    assert "| 1 | `FLASH_ATTN` |\n| 2 | `FLASHINFER` |" in result.expected_text


def test_a_prefill_backend_that_does_not_parse_is_not_called_stale(tmp_path):
    root = copy_fixture(tmp_path / "tree")
    ragged = "vllm/v1/attention/backends/mla/prefill/trtllm_ragged.py"
    (root / ragged).write_text("class (\n")
    result = check(root)
    assert [p.path for p in result.errors] == [ragged]
    assert result.cells == []
    assert "| `TRTLLM_RAGGED`‡ |" in result.expected_text


def test_what_is_cached_keeps_the_unreadable_prefill_backends():
    expected = Expected({"t": "| a |"}, [], ["FLASHMLA"], ["TRTLLM_RAGGED"])
    again = Expected.from_cache(expected.to_cache())
    assert (again.unreadable, again.unreadable_prefill) == (["FLASHMLA"], ["TRTLLM_RAGGED"])


def test_a_row_whose_cells_all_go_to_defaults_warns_and_names_the_file_read(tmp_path):
    # 0.27.1 -> 0.33.0: FLASHMLA_SPARSE_DSV4 went from specific values to Any in every
    # column, most likely vLLM's generator failing to read the backend, not a real change.
    from bot.core.snapshot import DirTree
    from bot.gendocs.doc_check import lost_information

    registry = tmp_path / "vllm" / "v1" / "attention" / "backends" / "registry.py"
    registry.parent.mkdir(parents=True)
    registry.write_text(
        "class AttentionBackendEnum(Enum):\n"
        '    FLASHMLA_SPARSE_DSV4 = "vllm.models.deepseek_v4.sparse_mla.DeepseekV4Backend"\n'
    )
    row = "`FLASHMLA_SPARSE_DSV4`"
    preview = [
        {"table": "mla", "row": row, "column": c, "before": b, "after": "Any", "change": "changed"}
        for c, b in (("Dtypes", "bf16"), ("Block Sizes", "64"), ("Compute Cap.", "10.x"))
    ] + [
        {"table": "mla", "row": "`FLASHMLA`", "column": "Dtypes", "before": "fp16",
         "after": "fp16, bf16", "change": "changed"},
    ]  # fmt: skip
    [warning] = lost_information("docs/design/attention_backends.md", preview, DirTree(tmp_path))
    assert warning.severity == "warning"
    assert "3 cells went from specific values to defaults" in warning.message
    assert "generator may have failed to read this backend" in warning.message
    assert "(it read vllm/models/deepseek_v4/sparse_mla.py)" in warning.message
    # One cell to a default, or a move to specific values, is an ordinary change.
    assert lost_information("d.md", preview[:1] + preview[3:], DirTree(tmp_path)) == []


def _preview_text(preview: list[dict]) -> str:
    finding = {
        "path": DOC, "kind": "builtin", "in_sync": True, "cells": [], "manual_edits": [],
        "problems": [], "notes": [], "preview": preview, "fix_command": "", "patch": "",
    }  # fmt: skip
    section = Section("generated_docs", Status.PASS, "in sync", [finding])
    return render_markdown(Report("o/r", 1, "f" * 40, "e" * 40, [section]))


def test_long_before_and_after_values_are_cut_where_they_differ():
    # vLLM 0.33.0's FLASH_ATTN prefill Notes: the first 160 characters are the same on both
    # sides; on main both were cut there and read the same.
    shared = "(qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128) or " * 3
    before, after = shared + "only", shared + "(qk_nope_head_dim=256, v_head_dim=256) only"
    change = {"table": "table-mla-prefill", "row": "FLASH_ATTN", "column": "Notes"}
    text = _preview_text([change | {"before": before, "after": after, "change": "changed"}])
    [line] = [x for x in text.splitlines() if "FLASH\\_ATTN" in x]
    shown_before, shown_after = line.split(" · Notes: ", 1)[1].split(" → ")
    assert shown_before != shown_after
    assert shown_before.startswith("…") and shown_before.endswith("only")
    assert "qk\\_nope\\_head\\_dim=256" in shown_after


def test_generated_cells_are_code_not_literal_backticks_and_fit_as_a_list():
    # On main a whole new row was one cell of a five-column table (past 780 px), its values
    # with literal backticks.
    row = {"table": "table-mla-decode", "row": "TOKENSPEED_MLA", "change": "added"}
    values = {"Backend": "`TOKENSPEED_MLA`", "KV Dtypes": "`fp8`, `fp8_e4m3`", "Sink": "❌"}
    preview = [row | {"column": k, "before": "(absent)", "after": v} for k, v in values.items()]
    kv = {"table": "table-mla-decode", "row": "FLASHMLA", "column": "KV Dtypes"}
    long_kv = ", ".join(f"`fp8_variant_{i}`" for i in range(30))
    preview.append(kv | {"before": long_kv, "after": long_kv + ", `nvfp4`", "change": "changed"})
    text = _preview_text(preview)
    html = render_gfm(text)
    assert "<table>" not in html
    assert "<code>TOKENSPEED_MLA</code>" in html and "<code>fp8_e4m3</code>" in html
    for item in re.findall(r"<li>(.*?)</li>", html, re.S):
        assert "`" not in re.sub(r"<code>.*?</code>", "", item), item
    assert "<code>nvfp4</code>" in html  # the cut kept what differs, as code


def test_the_real_dsv4_row_going_to_the_generators_defaults_warns(tmp_path):
    # vLLM 0.27.1 -> 0.33.0, as the generator wrote it: FLASHMLA_SPARSE_DSV4's class moved to
    # vllm/models/deepseek_v4/sparse_mla.py and declares nothing itself, so every column took
    # the generator's default (fp16, bf16; `auto`; Any; ❌), not only Any. On main this was
    # one neutral change among many.
    from bot.core.snapshot import DirTree
    from bot.gendocs.doc_check import lost_information

    registry = tmp_path / "vllm" / "v1" / "attention" / "backends" / "registry.py"
    registry.parent.mkdir(parents=True)
    registry.write_text(
        "class AttentionBackendEnum(Enum):\n    FLASHMLA_SPARSE_DSV4 = (\n"
        '        "vllm.models.deepseek_v4.sparse_mla.DeepseekV4FlashMLABackend"\n    )\n'
    )
    real = [
        ("Dtypes", "bf16", "fp16, bf16"),
        ("KV Dtypes", "`auto`, `fp8_ds_mla`, `fp8`", "`auto`"),
        ("Block Sizes", "256", "Any"),
        ("Head Sizes", "512", "Any"),
        ("Sink", "✅", "❌"),
        ("Sparse", "✅", "❌"),
        ("Compute Cap.", "9.x-10.x", "Any"),
    ]
    row = {"table": "table-mla-v4-decode", "row": "FLASHMLA_SPARSE_DSV4", "change": "changed"}
    preview = [row | {"column": c, "before": b, "after": a} for c, b, a in real]
    [warning] = lost_information(DOC, preview, DirTree(tmp_path))
    assert "FLASHMLA_SPARSE_DSV4: 7 cells went from specific values to defaults" in warning.message
    assert "Sink, Sparse and 1 more)" in warning.message
    assert "(it read vllm/models/deepseek_v4/sparse_mla.py)" in warning.message
    # A real feature change (one flag switched off, block sizes made specific) stays quiet.
    flags = [row | {"column": "DCP", "before": "✅", "after": "❌"}]
    flags.append(row | {"column": "Block Sizes", "before": "Any", "after": "64"})
    assert lost_information(DOC, flags, DirTree(tmp_path)) == []


def test_cut_values_keep_code_spans_closed_only_where_backticks_quote_code():
    from bot.core.difference import differing

    quoted = ", ".join(f"`fp8_variant_{i}`" for i in range(20))
    before, after = differing(quoted, quoted + ", `nvfp4`", 120)
    assert before.count("`") % 2 == 0 and after.count("`") % 2 == 0
    assert after.endswith("`nvfp4`") and before != after
    # A generated file's line is shown verbatim as code: nothing is added to it.
    line = "| `FLASH_ATTN " + "x" * 200 + " a` |"
    other = line.replace(" a`", " b`")
    verbatim, _ = differing(line, other, 120, spans=False)
    assert verbatim.startswith("…x") and verbatim.endswith(" a` |")
    quoted, _ = differing(line, other, 120)
    assert quoted.startswith("…`x")  # the span it cut into is opened again
