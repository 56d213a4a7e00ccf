"""prbot duplicates over an export, prbot check --open-prs, and the report section."""

from __future__ import annotations

import json

import pytest
from duplicates_helpers import REGISTRY, sample_records, write_export

from bot.cli import main


def test_json_follows_the_contract_and_bad_lines_are_named(tmp_path, capsys) -> None:
    export = write_export(
        tmp_path / "prs.jsonl",
        [
            *sample_records(),
            b"{not json",
            {"title": "no number"},
            b'{"number": 9, "title": "caf\xe9 latin-1"}',
        ],
    )
    assert main(["duplicates", "--prs", str(export), "--format", "json", "--top", "3"]) == 0
    out, err = capsys.readouterr()
    results = {r["number"]: r for r in json.loads(out)["results"]}
    assert set(results) == {1, 2, 3, 4, 5, 9}
    (first,) = results[1]["candidates"]
    assert set(first) >= {"number", "score", "tier", "evidence"}
    assert first["number"] == 2 and first["tier"] == "likely_duplicate"
    assert 0 <= first["score"] <= 1
    assert results[4]["candidates"][0]["number"] == 5  # title-only records still rank
    assert "prs.jsonl:6: malformed JSON" in err
    assert "prs.jsonl:7: skipped: missing or invalid 'number'" in err
    assert "prs.jsonl:8 (#9): not valid UTF-8" in err


def test_markdown_sweep_shows_clusters_and_neutralises_titles(tmp_path, capsys) -> None:
    records = sample_records()
    records[1]["title"] = "@maintainers <img src=x> [click](http://evil) #77 **bold**"
    export = write_export(tmp_path / "prs.jsonl", records)
    assert main(["duplicates", "--prs", str(export)]) == 0
    out = capsys.readouterr().out
    assert "## Likely duplicate clusters (1)" in out
    assert "- #1 Add TokenSpeed MLA backend; #2 " in out
    assert "<img" not in out and "@maintainers" not in out and "[click]" not in out
    assert "`TOKENSPEED_MLA`" in out


def test_cli_errors_are_one_line(tmp_path, capsys) -> None:
    assert main(["duplicates", "--prs", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read the PR export" in capsys.readouterr().err
    export = write_export(tmp_path / "prs.jsonl", sample_records())
    assert main(["duplicates", "--prs", str(export), "--pr", "99"]) == 2
    assert "no PR #99" in capsys.readouterr().err
    assert main(["duplicates", "--prs", str(export), "--top", "0"]) == 2


def test_check_open_prs_missing_file_is_one_line(git_repo, tmp_path, capsys) -> None:
    git_repo.commit({"a.py": "x = 1\n"}, "base")
    missing = tmp_path / "nope.jsonl"
    args = ["check", "--repo", str(git_repo.path), "--base", "HEAD", "--head", "HEAD"]
    assert main([*args, "--open-prs", str(missing)]) == 2
    assert "cannot read the PR export" in capsys.readouterr().err


@pytest.mark.slow
def test_prbot_check_audits_against_an_export(git_repo, tmp_path, capsys) -> None:
    git_repo.commit({REGISTRY: "\n".join(f"line {i}" for i in range(80)) + "\n"}, "base")
    base = git_repo.git("rev-parse", "HEAD")
    lines = [f"line {i}" for i in range(80)]
    lines.insert(60, '    TOKENSPEED_MLA = "x.TokenSpeedBackend"')
    git_repo.commit({REGISTRY: "\n".join(lines) + "\n"}, "Add TokenSpeed MLA backend")
    export = write_export(tmp_path / "prs.jsonl", sample_records())
    code = main(
        [
            "check",
            "--repo",
            str(git_repo.path),
            "--base",
            base,
            "--head",
            "HEAD",
            "--open-prs",
            str(export),
            "--format",
            "json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    (section,) = [s for s in report["sections"] if s["check"] == "duplicates"]
    assert {f["number"] for f in section["findings"]} >= {1, 2}


def test_bad_records_are_named_and_the_run_goes_on(tmp_path, capsys) -> None:
    many = [{"path": f"vllm/gen/f{i}.py", "additions": 1, "deletions": 0} for i in range(3_000)]
    export = write_export(
        tmp_path / "prs.jsonl",
        [
            *sample_records(),
            {"number": 20, "title": "Mass rename", "files": many},
            {"number": 21, "title": "Huge body", "body": "word " * 100_000},
            {"number": 22, "title": "Logo", "files": [{"path": "a.png", "patch": "\x00\x89PNG"}]},
            {"number": 23, "title": 42, "files": "not a list"},
            [1, 2],
        ],
    )
    assert main(["duplicates", "--prs", str(export), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert {r["number"] for r in json.loads(out)["results"]} >= {1, 2, 20, 21, 22, 23}
    assert "prs.jsonl:6 (#20): 3,000 changed files" in err
    assert "prs.jsonl:7 (#21): body has 500,000 characters" in err
    assert "prs.jsonl:9 (#23): title is int, not text; ignored" in err
    assert "prs.jsonl:10: skipped: expected a JSON object, got list" in err


def test_out_of_range_min_score_and_an_empty_export_say_so(tmp_path, capsys) -> None:
    export = write_export(tmp_path / "prs.jsonl", [])
    assert main(["duplicates", "--prs", str(export), "--min-score", "5"]) == 2
    assert "--min-score must be between 0 and 1" in capsys.readouterr().err
    assert main(["duplicates", "--prs", str(export)]) == 0
    assert capsys.readouterr().out == "No PRs in the export.\n"
