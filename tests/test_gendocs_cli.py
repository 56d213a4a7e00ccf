"""``prbot docs``: exit codes, text and JSON output, and --write followed by --check."""

from __future__ import annotations

import json

from gendocs_helpers import DOC, NEW_BACKEND_ENTRY, NEW_BACKEND_MODULE, REGISTRY, copy_fixture, edit

from bot.cli import main

EDITED_CELL = ("| ✅ | Decoder | 10.x |", "| ✅ | Decoder | 12.x |")


def test_check_in_sync_exits_0(tmp_path, capsys):
    root = copy_fixture(tmp_path / "tree")
    assert main(["docs", "--repo", str(root), "--check"]) == 0
    assert capsys.readouterr().out == f"{DOC}: in sync\n"


def test_check_on_drift_exits_1_and_names_backend_and_column(tmp_path, capsys):
    root = copy_fixture(tmp_path / "tree")
    edit(root, DOC, *EDITED_CELL)
    assert main(["docs", "--repo", str(root), "--check"]) == 1
    out = capsys.readouterr().out
    assert "OUT OF SYNC" in out
    assert (
        "table-standard | FLASHINFER TRTLLM† | Compute Cap.: expected '10.x', found '12.x'" in out
    )
    assert "fix: uv run prbot docs --repo . --write" in out


def test_json_format_prints_the_findings(tmp_path, capsys):
    root = copy_fixture(tmp_path / "tree")
    edit(root, DOC, *EDITED_CELL)
    assert main(["docs", "--repo", str(root), "--check", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "fail"
    [finding] = report["findings"]
    assert finding["path"] == DOC and finding["in_sync"] is False
    assert finding["cells"] == [
        {
            "table": "table-standard",
            "row": "FLASHINFER TRTLLM†",
            "column": "Compute Cap.",
            "expected": "10.x",
            "actual": "12.x",
            "kind": "cell",
        }
    ]


def test_write_rewrites_only_the_tables_then_check_passes(tmp_path, capsys):
    root = copy_fixture(tmp_path / "tree")
    pristine = (root / DOC).read_text()
    edit(root, DOC, *EDITED_CELL)
    edit(root, DOC, "| 1 | `FLASHMLA` |\n| 2 | `TRITON_MLA` |", "| 1 | `TRITON_MLA` |")
    assert main(["docs", "--repo", str(root), "--write"]) == 0
    assert (root / DOC).read_text() == pristine
    out, err = capsys.readouterr()
    assert "rewrote docs/design/attention_backends.md" in err
    # A file this run changed is never reported "in sync": it was not.
    assert out == f"{DOC}: rewritten\n"
    assert main(["docs", "--repo", str(root), "--check"]) == 0
    assert capsys.readouterr().out == f"{DOC}: in sync\n"
    assert main(["docs", "--repo", str(root), "--write"]) == 0  # nothing to write now
    assert capsys.readouterr().out == f"{DOC}: in sync\n"


def test_docs_chooses_the_rule_set_as_check_does(tmp_path, capsys, monkeypatch):
    # A tree with vLLM's detect paths gets the vllm rules with no flag, like `prbot check`
    # (the generic rules read vLLM's doc differently and report drift that is not there).
    monkeypatch.delenv("PRBOT_DEFAULT_RULES", raising=False)
    root = copy_fixture(tmp_path / "tree")
    (root / "requirements").mkdir()
    (root / "requirements" / "cuda.txt").write_text("torch==2.9.0\n")
    (root / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    assert main(["docs", "--repo", str(root), "--check", "--no-hooks"]) == 0
    assert "using the built-in 'vllm' rules" in capsys.readouterr().err
    assert (
        main(["docs", "--repo", str(root), "--check", "--no-hooks", "--default-rules", "default"])
        == 0
    )
    assert "using the built-in" not in capsys.readouterr().err


def test_the_fix_line_is_the_repositorys_own_generator_where_it_has_one(tmp_path, capsys):
    # prbot is no dependency of the repository: `uv run prbot ...` would not run there.
    root = copy_fixture(tmp_path / "tree")
    generator = root / "tools" / "pre_commit" / "generate_attention_backend_docs.py"
    generator.parent.mkdir(parents=True)
    generator.write_text("print('the repository generator')\n")
    edit(root, DOC, *EDITED_CELL)
    assert main(["docs", "--repo", str(root), "--check", "--no-hooks"]) == 1
    out = capsys.readouterr().out
    assert "fix: python tools/pre_commit/generate_attention_backend_docs.py" in out
    assert "uv run prbot" not in out


def test_a_source_that_does_not_parse_is_not_verified_exit_3_and_refuses_write(tmp_path, capsys):
    root = copy_fixture(tmp_path / "tree")
    edit(root, "vllm/v1/attention/backends/cpu_attn.py", "class CPUAttentionBackend:", "class:")
    assert main(["docs", "--repo", str(root), "--check"]) == 3
    assert "error: vllm/v1/attention/backends/cpu_attn.py:" in capsys.readouterr().out
    assert main(["docs", "--repo", str(root), "--write"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("prbot: error: cannot rewrite docs/design/attention_backends.md")


def test_user_errors_are_one_line_and_exit_2(tmp_path, capsys):
    assert main(["docs", "--repo", str(tmp_path / "nowhere"), "--check"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["docs", "--repo", str(empty), "--check"]) == 2
    assert "no generated doc found" in capsys.readouterr().err
    bad_rules = tmp_path / "rules.yaml"
    bad_rules.write_text("checks:\n  generated_docs:\n    docs:\n      - pathh: x\n")
    root = copy_fixture(tmp_path / "tree")
    assert main(["docs", "--repo", str(root), "--rules", str(bad_rules), "--check"]) == 2
    assert "rules.yaml:4" in capsys.readouterr().err


def test_a_missing_backend_row_is_one_line_naming_each_column(tmp_path, capsys):
    root = copy_fixture(tmp_path / "tree")
    edit(root, REGISTRY, *NEW_BACKEND_ENTRY)
    (root / NEW_BACKEND_MODULE[0]).write_text(NEW_BACKEND_MODULE[1])
    assert main(["docs", "--repo", str(root), "--check"]) == 1
    [line] = [x for x in capsys.readouterr().out.splitlines() if "TREE_ATTN" in x]
    assert line.startswith("  table-standard | TREE_ATTN: row missing (Backend: `TREE_ATTN`;")
    assert "Head Sizes: 64, 128;" in line


def test_a_hook_whose_command_cannot_start_is_reported_not_raised(tmp_path, capsys):
    root = copy_fixture(tmp_path / "tree")
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(
        "checks:\n  generated_docs:\n    docs:\n      - path: " + DOC + "\n"
        "    hooks:\n      - name: gone\n        command: [prbot-no-such-generator]\n"
        "        outputs: [docker/versions.json]\n"
    )
    assert main(["docs", "--repo", str(root), "--rules", str(rules_file), "--check"]) == 3
    out = capsys.readouterr().out
    assert "docker/versions.json: NOT VERIFIED" in out
    assert "could not start 'prbot-no-such-generator'" in out


def test_an_unexpected_failure_is_one_line_naming_the_doc(tmp_path, capsys, monkeypatch):
    def broken_extractor(*args, **kwargs):
        raise KeyError("registry")

    monkeypatch.setattr("bot.gendocs.suite.check_doc", broken_extractor)
    root = copy_fixture(tmp_path / "tree")
    assert main(["docs", "--repo", str(root), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{DOC}: cannot check: KeyError: 'registry'" in err
