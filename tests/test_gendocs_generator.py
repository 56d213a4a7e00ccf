"""The repository's own doc generator as the authority: run sandboxed, base revision's copy.

The fixture repository (tests/gendocs_helpers.py) carries a generator of its own, written
in the manner of vLLM's (ast only, ``--output``), a doc in that generator's older layout,
and a backend built by a factory call.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import replace

from gendocs_helpers import (
    DOC,
    GENERATED_DOC,
    GENERATOR,
    GENERATOR_RULES,
    MARKER_DOC,
    MKDOCS_GENERATOR,
    generator_repo_files,
    mkdocs_repo_files,
    replaced,
    write_files,
)

from bot.checks.base import Status
from bot.checks.generated_docs import run
from bot.cli import main
from bot.core.snapshot import DirTree, snapshot_from_checkout
from bot.gendocs.config import DocGenerator, DocRule, GeneratedDocsRules
from bot.gendocs.doc_check import check_doc
from bot.gendocs.generator import NOT_ISOLATED
from bot.local.sandbox import SandboxRunner
from bot.report import rules

EDITED_ROW = (
    "| `FLASH_ATTN` | fp16, bf16 | 64, 128 | ✅ |",
    "| `FLASH_ATTN` | fp16 | 64, 128 | ✅ |",
)


def doc_rule() -> DocRule:
    return rules.load_text(GENERATOR_RULES, "rules.yaml").checks.generated_docs.docs[0]


def check_json(root, rules_file, capsys) -> tuple[int, dict]:
    code = main(
        ["docs", "--repo", str(root), "--rules", str(rules_file), "--check", "--format", "json"]
    )
    return code, json.loads(capsys.readouterr().out)


def setup_tree(tmp_path, files=None):
    root = write_files(tmp_path / "repo", files or generator_repo_files())
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(GENERATOR_RULES)
    return root, rules_file


def test_a_doc_in_its_generators_older_layout_is_in_sync_and_write_keeps_it(tmp_path, capsys):
    root, rules_file = setup_tree(tmp_path)
    code, report = check_json(root, rules_file, capsys)
    assert code == 0
    (finding,) = report["findings"]
    assert finding["in_sync"] and finding["cells"] == [] and finding["patch"] == ""
    assert finding["generator"]["script"] == GENERATOR
    assert finding["generator"]["ran_from"] == "tree"
    # The extractor reads the older prefill table (Enable / Disable) and skips the
    # factory-built backend exactly as the generator does: no disagreement, no problem.
    assert finding["extractor_disagreements"] == []
    assert finding["extractor_problems"] == []
    assert main(["docs", "--repo", str(root), "--rules", str(rules_file), "--write"]) == 0
    assert (root / DOC).read_text() == GENERATED_DOC  # the real prefill rows are all there


def test_drift_is_explained_cell_by_cell_and_write_is_the_generators_output(tmp_path, capsys):
    root, rules_file = setup_tree(tmp_path)
    (root / DOC).write_text(replaced(GENERATED_DOC, *EDITED_ROW))
    code, report = check_json(root, rules_file, capsys)
    assert code == 1
    (finding,) = report["findings"]
    assert [
        (c["table"], c["row"], c["column"], c["expected"], c["actual"]) for c in finding["cells"]
    ] == [("table-standard", "FLASH_ATTN", "Dtypes", "fp16, bf16", "fp16")]
    assert "+| `FLASH_ATTN` | fp16, bf16 | 64, 128 | ✅ |" in finding["patch"]
    assert main(["docs", "--repo", str(root), "--rules", str(rules_file), "--write"]) == 0
    assert (root / DOC).read_text() == GENERATED_DOC


def test_text_edited_outside_the_tables_is_drift_too(tmp_path, capsys):
    root, rules_file = setup_tree(tmp_path)
    (root / DOC).write_text(replaced(GENERATED_DOC, "do not edit by hand", "edit freely"))
    code, report = check_json(root, rules_file, capsys)
    assert code == 1
    (cell,) = report["findings"][0]["cells"]
    assert (cell["table"], cell["row"], cell["kind"]) == ("(text)", "line 3", "text")
    assert "edit freely" in cell["actual"] and "do not edit" in cell["expected"]


def test_a_failing_generator_is_not_verified_exit_3_with_the_reason(tmp_path, capsys):
    files = generator_repo_files()
    files[GENERATOR] = "import torch\n"  # what a generator needing more than ast would do
    root, rules_file = setup_tree(tmp_path, files)
    code, report = check_json(root, rules_file, capsys)
    assert code == 3
    # Not verified is an error (never a pass for a required check), not a warning.
    assert report["status"] == "error"
    assert report["summary"].startswith("could not verify docs/design/attention_backends.md")
    assert "ModuleNotFoundError: No module named 'torch'" in report["summary"]
    assert report["findings"][0]["cells"] == []


def test_a_generator_that_never_ends_is_stopped_and_reported(tmp_path, capsys):
    files = generator_repo_files()
    files[GENERATOR] = "while True:\n    pass\n"
    root, rules_file = setup_tree(tmp_path, files)
    rules_file.write_text(GENERATOR_RULES.replace("timeout: 20", "timeout: 1"))
    code, report = check_json(root, rules_file, capsys)
    assert code == 3
    assert "timed out after 1s" in report["summary"]


def test_an_output_that_is_a_symlink_out_of_the_tree_is_not_read(tmp_path, capsys):
    files = generator_repo_files()
    files[GENERATOR] = (
        "import os, sys\nout = sys.argv[sys.argv.index('--output') + 1]\n"
        "os.symlink('/etc/hostname', out)\n"
    )
    root, rules_file = setup_tree(tmp_path, files)
    code, report = check_json(root, rules_file, capsys)
    assert code == 3
    assert "symbolic link" in report["summary"]
    assert report["findings"][0]["patch"] == ""


def test_the_extractors_disagreement_is_logged_never_drift(tmp_path, caplog):
    files = generator_repo_files()
    # This generator release shows fp32 for TRITON_ATTN by a rule prbot's extractor lacks.
    files[GENERATOR] = replaced(
        files[GENERATOR],
        'SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}',
        'SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "f32"}',
    )
    files[DOC] = replaced(GENERATED_DOC, "fp16, bf16, fp32", "fp16, bf16, f32")
    root = write_files(tmp_path / "repo", files)
    with caplog.at_level(logging.WARNING, logger="bot.gendocs.doc_check"):
        result = check_doc(doc_rule(), DirTree(root), runner=SandboxRunner(), work_dir=tmp_path)
    assert result.in_sync and result.cells == []
    (disagreement,) = result.extractor_disagreements
    assert (disagreement.row, disagreement.column) == ("TRITON_ATTN", "Dtypes")
    assert (disagreement.expected, disagreement.actual) == ("fp16, bf16, f32", "fp16, bf16, fp32")
    assert "prbot's extractor disagrees with the repository's generator" in caplog.text


def test_without_a_sandbox_runner_the_extractor_judges_and_says_so(tmp_path):
    root = write_files(tmp_path / "repo", generator_repo_files())
    result = check_doc(doc_rule(), DirTree(root))
    assert result.generator is None
    assert any("no sandbox runner" in note for note in result.notes)


def pr_snapshot(make_repo, base_files, changes, *, trusted):
    repo = make_repo()
    base = repo.commit(base_files, "base")
    head = repo.commit(changes, "the PR")
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    snapshot = dataclasses.replace(snapshot, trusted=trusted)
    return snapshot


def generator_rules() -> GeneratedDocsRules:
    return rules.load_text(GENERATOR_RULES, "rules.yaml").checks.generated_docs


def test_an_untrusted_pr_gets_the_base_revisions_generator(make_repo, tmp_path, check_context):
    files = generator_repo_files()
    # The PR rewrites the generator to bless its own doc; the base generator judges it.
    sneaky = replaced(files[GENERATOR], "*sorted(rows),", '"| `FLASH_ATTN` | any | any | ✅ |",')
    doc = replaced(GENERATED_DOC, EDITED_ROW[0], "| `FLASH_ATTN` | any | any | ✅ |")
    doc = replaced(doc, "| `TRITON_ATTN` | fp16, bf16, fp32 | Any | ❌ |\n", "")
    changes = {GENERATOR: sneaky, DOC: doc}
    check_context = replace(check_context, runner=SandboxRunner())
    untrusted = pr_snapshot(make_repo, files, changes, trusted=False)
    section = run(untrusted, generator_rules(), check_context)
    assert section.status == Status.FAIL
    (finding,) = section.findings
    assert finding["generator"]["ran_from"] == "base"
    assert any("ran the base revision's generator" in n for n in finding["notes"])
    assert {c["row"] for c in finding["cells"]} == {"FLASH_ATTN", "TRITON_ATTN"}
    trusted = pr_snapshot(make_repo, files, changes, trusted=True)
    section = run(trusted, generator_rules(), check_context)
    assert section.status == Status.PASS, section.summary
    assert section.findings[0]["generator"]["ran_from"] == "head"


def test_where_the_sandbox_cannot_isolate_a_trusted_authors_changed_generator_does_not_run(
    make_repo, check_context
):
    # On main "trusted" (any collaborator, read-only ones included) ran the PR's generator as
    # prbot's own user: it read the webhook secret from /proc and the key, and the report
    # printed them as "expected" cells (issue 21, item 7). Without namespaces or a sandbox
    # user nothing isolates it, so the base revision's generator runs, and the report says why.
    files = generator_repo_files()
    sneaky = replaced(files[GENERATOR], "*sorted(rows),", '"| `FLASH_ATTN` | any | any | ✅ |",')
    runner = SandboxRunner(use_namespaces=False)
    assert not runner.isolated
    check_context = replace(check_context, runner=runner)
    trusted = pr_snapshot(make_repo, files, {GENERATOR: sneaky}, trusted=True)
    (finding,) = run(trusted, generator_rules(), check_context).findings
    assert finding["generator"]["ran_from"] == "base"
    [note] = [n for n in finding["notes"] if "changes the doc's generator" in n]
    assert (
        note
        == f"the PR changes the doc's generator; ran the base revision's generator: {NOT_ISOLATED}"
    )


def test_a_generator_the_pr_adds_is_not_run_for_an_untrusted_author(make_repo, check_context):
    files = generator_repo_files()
    base_files = {k: v for k, v in files.items() if k != GENERATOR}
    check_context = replace(check_context, runner=SandboxRunner())
    snapshot = pr_snapshot(make_repo, base_files, {GENERATOR: files[GENERATOR]}, trusted=False)
    section = run(snapshot, generator_rules(), check_context)
    (finding,) = section.findings
    assert finding["generator"] is None
    assert any("not run for an author who is not trusted" in n for n in finding["notes"])


def test_a_marker_page_is_filled_by_its_mkdocs_generator_without_mkdocs(tmp_path, capsys):
    root, rules_file = setup_tree(tmp_path, mkdocs_repo_files())
    code, report = check_json(root, rules_file, capsys)
    assert code == 0, report
    (finding,) = report["findings"]
    assert finding["mode"] == "markers"
    assert finding["generator"]["script"] == MKDOCS_GENERATOR
    assert finding["extractor_disagreements"] == []


def test_a_marker_the_generator_cannot_fill_is_drift(tmp_path, capsys):
    files = mkdocs_repo_files()
    files[DOC] = replaced(MARKER_DOC, '"gen:table-standard"', '"gen:table-std"')
    root, rules_file = setup_tree(tmp_path, files)
    code, report = check_json(root, rules_file, capsys)
    assert code == 1
    (cell,) = report["findings"][0]["cells"]
    assert cell["kind"] == "marker"
    assert 'missing marker --8<-- "gen:table-standard"' in cell["actual"]


def test_a_pr_to_a_marker_page_previews_the_generated_change(make_repo, check_context):
    files = mkdocs_repo_files()
    flash = "vllm/v1/attention/backends/flash_attn.py"
    changes = {flash: replaced(files[flash], "return [64, 128]", "return [64, 128, 256]")}
    check_context = replace(check_context, runner=SandboxRunner())
    section = run(
        pr_snapshot(make_repo, files, changes, trusted=False), generator_rules(), check_context
    )
    assert section.status == Status.PASS, section.summary
    (change,) = section.findings[0]["preview"]
    assert (change["row"], change["column"], change["before"], change["after"]) == (
        "FLASH_ATTN",
        "Head Sizes",
        "64, 128",
        "64, 128, 256",
    )


def test_generator_paths_must_stay_inside_the_repository():
    for bad in ("../outside.py", "/etc/x.py"):
        try:
            DocGenerator(script=bad)
        except ValueError as exc:
            assert "not a path inside the repository" in str(exc)
        else:
            raise AssertionError(f"{bad} accepted")


def test_an_oversized_doc_is_not_read_and_not_verified(tmp_path, capsys):
    files = generator_repo_files()
    files[DOC] = GENERATED_DOC + "x" * 4_100_000
    root, rules_file = setup_tree(tmp_path, files)
    code, report = check_json(root, rules_file, capsys)
    assert code == 3
    assert "over the 4.0 MB limit for a generated doc; not read" in report["summary"]


def test_a_long_text_difference_is_one_cell_not_a_quadratic_diff():
    from bot.gendocs.doc_diff import MAX_TEXT_LINES, text_cells

    ours = [f"line {i}" for i in range(MAX_TEXT_LINES + 1)]
    (cell,) = text_cells(ours, list(reversed(ours)))
    assert cell.kind == "text" and "too long to compare" in cell.actual
    assert text_cells(ours, list(ours)) == []


def test_a_link_out_of_the_tree_where_the_output_goes_is_never_written_through(tmp_path, capsys):
    root, rules_file = setup_tree(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (root / ".prbot-generated").symlink_to(tmp_path)  # would send the output to tmp_path
    rules_file.write_text(
        GENERATOR_RULES.replace("style: output", "style: output\n            inputs: []")
    )
    code, report = check_json(root, rules_file, capsys)
    assert code == 0, report["summary"]
    assert victim.read_text() == "keep me\n"
    assert not (tmp_path / "attention_backends.md").exists()
