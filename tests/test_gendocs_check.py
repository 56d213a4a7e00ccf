"""The generated_docs check over real git snapshots, and its section in the report."""

from __future__ import annotations

import re
import sys
from dataclasses import replace

from gendocs_helpers import DOC, NEW_BACKEND_ENTRY, NEW_BACKEND_MODULE, fixture_files, replaced

from bot.checks.base import MemoryCache, Section, Status
from bot.checks.generated_docs import CHECK, describe_cells, run
from bot.core.snapshot import snapshot_from_checkout
from bot.gendocs.config import DocRule, GeneratedDocsRules, HookRule
from bot.local.sandbox import SandboxRunner
from bot.report import rules
from bot.report.render import Report, render_markdown

FEEDS = ["vllm/v1/attention/backends/**/*.py", "vllm/platforms/cuda.py"]
RULES = GeneratedDocsRules(docs=[DocRule(path=DOC, feeds=FEEDS)])


def pr(make_repo, changes: dict[str, str | None]):
    repo = make_repo()
    base = repo.commit(fixture_files(), "base")
    head = repo.commit(changes, "the PR")
    return snapshot_from_checkout(repo.path, base, head, trusted=True)


def add_backend() -> dict[str, str | None]:
    registry = fixture_files()["vllm/v1/attention/backends/registry.py"]
    return {
        "vllm/v1/attention/backends/registry.py": replaced(registry, *NEW_BACKEND_ENTRY),
        NEW_BACKEND_MODULE[0]: NEW_BACKEND_MODULE[1],
    }


def render(section) -> str:
    return render_markdown(Report("o/r", 1, "f" * 40, "e" * 40, [section]))


def test_registered_with_its_rules_in_the_builtin_sets():
    assert (CHECK.name, CHECK.order, CHECK.title) == ("generated_docs", 30, "Generated docs")
    vllm = rules.load_builtin("vllm").checks.generated_docs
    assert [d.path for d in vllm.docs] == [DOC]
    assert {h.name for h in vllm.hooks} == {"nightly-torch-test", "docker-versions"}


def test_a_pr_that_touches_no_feeding_path_is_skipped(make_repo, check_context):
    snapshot = pr(make_repo, {"README.md": "hello\n"})
    section = run(snapshot, RULES, check_context)
    assert section.status == Status.SKIP


def test_a_relevant_doc_that_is_not_in_the_tree_says_so(make_repo, check_context):
    elsewhere = GeneratedDocsRules(docs=[DocRule(path="docs/moved.md", feeds=FEEDS)])
    section = run(pr(make_repo, add_backend()), elsewhere, check_context)
    assert section.status == Status.SKIP
    assert section.summary == "no generated doc to check: docs/moved.md absent"


def test_a_backend_added_without_the_doc_fails_with_cells_fix_and_patch(make_repo, check_context):
    section = run(pr(make_repo, add_backend()), RULES, check_context)
    assert section.status == Status.FAIL
    [finding] = section.findings
    assert finding["path"] == DOC and finding["in_sync"] is False
    assert {(c["table"], c["row"], c["kind"]) for c in finding["cells"]} == {
        ("table-standard", "TREE_ATTN", "missing_row")
    }
    assert "1 row missing" in section.summary and "cell" not in section.summary
    text = render(section)
    # The missing row is one item that names each column with the value it should have.
    [line] = [x for x in text.splitlines() if x.startswith("- `table-standard`")]
    assert "· TREE\\_ATTN: row the generator writes, missing from the doc: " in line
    assert "Head Sizes: 64, 128" in line and "Backend: `TREE_ATTN`" in line
    assert "uv run prbot docs --repo . --write" in text
    assert "```diff" in text and "+| `TREE_ATTN` |" in text


def test_a_pr_that_regenerates_the_doc_passes(make_repo, check_context, tmp_path):
    changes = add_backend()
    doc = fixture_files()[DOC]
    row = (
        "| `TREE_ATTN` | | fp16, bf16 | `auto` | Any | 64, 128 "
        "| ❌ | ❌ | ❌ | ❌ | Decoder | Any |"
    )
    anchor = "| `TRITON_ATTN` | | fp16"
    changes[DOC] = replaced(doc, anchor, row + "\n" + anchor)
    section = run(pr(make_repo, changes), RULES, check_context)
    assert section.status == Status.PASS, section.findings
    assert section.findings[0]["in_sync"] is True


def test_paths_link_to_the_file_at_the_head_commit(make_repo, check_context):
    changes = add_backend()
    changes["vllm/v1/attention/backends/cpu_attn.py"] = "class (:\n"
    section = run(pr(make_repo, changes), RULES, check_context)
    text = render(section)  # the report names repository o/r, head ffff…
    blob = "https://github.com/o/r/blob/" + "f" * 40
    assert f"[`{DOC}`]({blob}/{DOC})" in text
    assert (
        f"[`vllm/v1/attention/backends/cpu_attn.py:1`]({blob}/vllm/v1/attention/backends/cpu_attn.py#L1)"
        in text
    )
    # A local checkout has no GitHub address: plain code, no link.
    local = render_markdown(Report("tree", None, "f" * 40, "e" * 40, [section]))
    assert f"`{DOC}`" in local and "](http" not in local


def test_hand_edited_cells_are_escaped_in_the_comment(make_repo, check_context):
    doc = fixture_files()[DOC]
    edited = replaced(doc, "| Decoder | 9.x-10.x |", "| Decoder | <img src=x> @admin |")
    section = run(pr(make_repo, {DOC: edited}), RULES, check_context)
    assert section.status == Status.FAIL
    text = render(section)
    # Inside the fenced patch the doc's text is inert; everywhere else it must be escaped.
    outside = re.sub(r"(?s)```diff.*?```", "", text)
    assert "```diff" in text and "<img" not in outside and "@admin" not in outside
    assert "&lt;img src=x&gt;" in outside


def test_a_bad_template_is_a_finding_not_a_crash(make_repo, check_context):
    bad = GeneratedDocsRules(docs=[DocRule(path=DOC, feeds=FEEDS, template="gendocs/nope.j2")])
    section = run(pr(make_repo, add_backend()), bad, check_context)
    # The doc could not be verified: an error, so a required check cannot pass through it.
    assert section.status == Status.ERROR
    assert "nope.j2 does not exist" in section.findings[0]["problems"][0]["message"]
    text = render(section)
    assert "could not be rendered" not in text and "nope.j2 does not exist" in text
    assert "⚠️ [`docs/design/attention_backends.md`](" in text and "could not be verified" in text


def test_hooks_run_through_the_context_runner(make_repo, check_context):
    generator = "open('out.txt', 'w').write(open('in.txt').read().upper())\n"
    files = {**fixture_files(), "gen.py": generator, "in.txt": "a\n", "out.txt": "A\n"}
    repo = make_repo()
    base = repo.commit(files, "base")
    head = repo.commit({"in.txt": "b\n"}, "change the input only")
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    hook = HookRule(
        name="upper", command=[sys.executable, "gen.py"], outputs=["out.txt"], feeds=["in.txt"]
    )
    check_context = replace(check_context, runner=SandboxRunner(timeout=60))
    section = run(snapshot, GeneratedDocsRules(hooks=[hook]), check_context)
    assert section.status == Status.FAIL
    [finding] = section.findings
    assert finding["kind"] == "hook" and finding["cells"][0]["expected"] == "B"
    assert check_context.runner.invocations == 1
    text = render(section)
    assert "could not be rendered" not in text
    assert "| Line | Expected | Actual |" in text and "| 1 | `B` | `A` |" in text
    assert "```diff" in text


class RecordingCache(MemoryCache):
    """The in-process cache, remembering which keys were stored and which were found."""

    def __init__(self) -> None:
        super().__init__()
        self.stored: list[str] = []
        self.hits: list[str] = []

    def get(self, namespace: str, key: str) -> str | None:
        value = super().get(namespace, key)
        if value is not None:
            self.hits.append(key)
        return value

    def put(self, namespace: str, key: str, value: str) -> None:
        self.stored.append(key)
        super().put(namespace, key, value)


def test_results_for_a_commit_are_cached_and_reused(make_repo, check_context):
    snapshot = pr(make_repo, add_backend())
    check_context = replace(check_context, cache=RecordingCache())
    first = run(snapshot, RULES, check_context)
    [key] = check_context.cache.stored
    assert key.startswith(snapshot.head_sha) and check_context.cache.hits == []
    again = run(snapshot, RULES, check_context)
    assert check_context.cache.hits == [key] and again.findings == first.findings


def test_the_summary_counts_whole_rows_once_and_says_one_cell():
    def cell(row, kind, column="Dtypes"):
        return {"table": "t", "row": row, "column": column, "kind": kind}

    cells = [cell("NEW", "missing_row", c) for c in ("Backend", "Dtypes", "Compute Cap.")]
    cells += [cell("OLD", "extra_row"), cell("FLASH_ATTN", "cell")]
    assert describe_cells(cells) == ["1 row missing", "1 row not expected", "1 cell"]
    # A generated file that is not there at all is not a missing row.
    assert describe_cells([cell("(file)", "table", "(file)")]) == ["1 cell"]


def test_a_patch_too_long_for_the_comment_is_not_cut_into_one_that_fails():
    finding = {
        "path": DOC,
        "in_sync": False,
        "cells": [{"table": "t", "row": "R", "column": "C", "expected": "1", "actual": "2"}],
        "kind": "doc",
        "problems": [],
        "manual_edits": [],
        "preview": [],
        "notes": [],
        "fix_command": "uv run prbot docs --repo . --write",
        "patch": "--- a/x\n+++ b/x\n" + "+| row |\n" * 5000,
    }
    finding["cells"][0]["kind"] = "cell"
    text = render(Section("generated_docs", Status.FAIL, "out of sync", [finding]))
    assert "```diff" not in text and "too long for a comment" in text
    assert "uv run prbot docs --repo . --write" in text
