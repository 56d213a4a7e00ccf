"""The Jinja2 table templates: columns, symbols, footnote markers, order, marker blocks."""

from __future__ import annotations

import copy

import pytest
from gendocs_helpers import copy_fixture

from bot.core.snapshot import DirTree
from bot.gendocs.attention_sources import extract
from bot.gendocs.render import TemplateError, layout, render_block, render_tables
from bot.gendocs.source import SourceTree
from bot.gendocs.tables import split_row


@pytest.fixture
def model(tmp_path):
    return extract(SourceTree(DirTree(copy_fixture(tmp_path / "tree"))))


def test_layout_names_a_region_for_every_committed_table():
    regions = layout().regions
    assert regions["table-mla-decode"][-1] == "### Decode Backends"
    assert regions["priority-mla-sm100"][-1] == "**Blackwell (SM 10.x):**"


def test_feature_rows_sort_by_name_then_variant_and_use_symbols(model):
    lines = render_tables(model)["table-standard"].split("\n")
    assert lines[1] == (
        "| ------- | ------- | ------ | --------- | ----------- | ---------- | ---- "
        "| ---------- | --------- | --- | --------------- | ------------ |"
    )
    names = [split_row(line)[:2] for line in lines[2:]]
    assert names[:4] == [
        ["`CPU_ATTN`", ""],
        ["`FLASHINFER`", "Native†"],
        ["`FLASHINFER`", "TRTLLM†"],
        ["`FLASH_ATTN`", "FA2*"],
    ]
    assert all(("✅" in line or "❌" in line) for line in lines[2:])


def test_the_mla_table_has_a_sparse_column_and_no_version_column(model):
    header = render_tables(model)["table-mla-decode"].split("\n")[0]
    assert "| Sparse |" in header and "Version" not in header


def test_a_priority_list_the_source_lacks_renders_no_table(model):
    del model.priorities["mla_sm100"]
    tables = render_tables(model)
    assert "priority-mla-sm100" not in tables and "priority-mla-default" in tables
    assert render_block("priority-mla", tables).startswith("**Ampere/Hopper (SM 8.x-9.x):**")


def test_marker_docs_give_minimax_and_v4_backends_tables_of_their_own(model):
    minimax = copy.deepcopy(next(b for b in model.backends if b.name == "TRITON_ATTN"))
    minimax.name = "MINIMAX_SPARSE"
    v4 = copy.deepcopy(next(b for b in model.backends if b.name == "FLASHMLA"))
    v4.name = "FLASHMLA_SPARSE_DSV4"
    model.backends += [minimax, v4]
    split = render_tables(model, split_special=True)
    assert "MINIMAX_SPARSE" in split["table-minimax"]
    assert "MINIMAX_SPARSE" not in split["table-standard"]
    assert "DSV4" in split["table-mla-v4-decode"] and "DSV4" not in split["table-mla-decode"]
    # A committed doc (vLLM 0.23 to 0.26) has the same sections, only when they have rows.
    committed = render_tables(model)
    assert "MINIMAX_SPARSE" in committed["table-minimax"]
    assert "MINIMAX_SPARSE" not in committed["table-standard"]
    model.backends.remove(minimax)
    assert "table-minimax" not in render_tables(model)
    assert "table-minimax" in render_tables(model, split_special=True)


def test_a_missing_template_is_a_clear_error(model):
    with pytest.raises(TemplateError, match="gendocs/missing.j2 does not exist"):
        render_tables(model, "gendocs/missing.j2")
