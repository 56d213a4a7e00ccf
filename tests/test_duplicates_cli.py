"""prbot duplicates over an export, prbot check --open-prs, and the report section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot import rules
from bot.checks import get_check
from bot.cli import main
from bot.duplicates.export import load_index_from_export
from bot.report import Report, render_markdown
from bot.snapshot import ChangedFile, Snapshot

REGISTRY = "vllm/v1/attention/backends/registry.py"
PATCH = '@@ -58,3 +58,4 @@\n ctx\n+    TOKENSPEED_MLA = "x.TokenSpeedBackend"\n'


def _write(path: Path, lines: list[object]) -> Path:
    raw = b""
    for line in lines:
        raw += (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
    path.write_bytes(raw)
    return path


def _records() -> list[object]:
    files = [{"path": REGISTRY, "additions": 1, "deletions": 0, "patch": PATCH}]
    return [
        {"number": 1, "title": "Add TokenSpeed MLA backend", "author": "a", "files": files},
        {"number": 2, "title": "Integrate tokenspeed decode", "author": "b", "files": files},
        {"number": 3, "title": "Docs: typo", "body": "", "author": "c"},
        {"number": 4, "title": "[Bug] Crash with EAGLE3 drafter and cuda graphs"},
        {
            "number": 5,
            "title": "Fix eagle3 drafter illegal memory access with cudagraphs",
            "state": "closed",  # the sweep ranks every PR in the file; the check only open ones
        },
    ]


def test_json_follows_the_contract_and_bad_lines_are_named(tmp_path, capsys) -> None:
    export = _write(
        tmp_path / "prs.jsonl",
        [
            *_records(),
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
    records = _records()
    records[1]["title"] = "@maintainers <img src=x> [click](http://evil) #77 **bold**"
    export = _write(tmp_path / "prs.jsonl", records)
    assert main(["duplicates", "--prs", str(export)]) == 0
    out = capsys.readouterr().out
    assert "## Likely duplicate clusters (1)" in out
    assert "- #1 Add TokenSpeed MLA backend; #2 " in out
    assert "<img" not in out and "@maintainers" not in out and "[click]" not in out
    assert "`TOKENSPEED_MLA`" in out


def test_cli_errors_are_one_line(tmp_path, capsys) -> None:
    assert main(["duplicates", "--prs", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read the PR export" in capsys.readouterr().err
    export = _write(tmp_path / "prs.jsonl", _records())
    assert main(["duplicates", "--prs", str(export), "--pr", "99"]) == 2
    assert "no PR #99" in capsys.readouterr().err
    assert main(["duplicates", "--prs", str(export), "--top", "0"]) == 2


def test_check_open_prs_missing_file_is_one_line(git_repo, tmp_path, capsys) -> None:
    git_repo.commit({"a.py": "x = 1\n"}, "base")
    missing = tmp_path / "nope.jsonl"
    args = ["check", "--repo", str(git_repo.path), "--base", "HEAD", "--head", "HEAD"]
    assert main([*args, "--open-prs", str(missing)]) == 2
    assert "cannot read the PR export" in capsys.readouterr().err


def _snapshot(title: str, files: list[ChangedFile], author: str = "z") -> Snapshot:
    return Snapshot(
        repo="vllm-project/vllm",
        base_sha="a" * 40,
        head_sha="b" * 40,
        base=None,
        head=None,
        files=files,
        number=100,
        title=title,
        author=author,
    )


def test_check_section_lists_duplicates_first_and_folds_the_rest(tmp_path, check_context) -> None:
    files = [{"path": REGISTRY, "additions": 1, "deletions": 0, "patch": PATCH}]
    records = [
        {"number": n, "title": f"Add TokenSpeed MLA backend take {n}", "author": f"u{n}"}
        | {"files": files}
        for n in range(1, 7)
    ]
    records.append(
        {"number": 50, "title": "@here <b>x</b> ![i](http://x)", "author": "q", "files": files}
    )
    check_context.open_prs = load_index_from_export(_write(tmp_path / "p.jsonl", records))
    ruleset = rules.load_builtin("default")
    snapshot = _snapshot("Add TokenSpeed MLA backend", [ChangedFile(REGISTRY, patch=PATCH)])
    check = get_check("duplicates")
    section = check.run(snapshot, ruleset.checks.duplicates, check_context)
    assert section.status == "warn"
    assert section.findings[0]["tier"] == "likely_duplicate"
    tiers = [f["tier"] for f in section.findings]
    assert tiers == sorted(tiers, key=lambda t: t != "likely_duplicate")
    report = Report("vllm-project/vllm", 100, "b" * 40, "a" * 40, [section])
    text = render_markdown(report)
    assert "Likely duplicates (same goal)" in text
    assert "more</summary>" in text  # beyond `show` the list folds
    assert "<b>x</b>" not in text and "@here" not in text and "![i]" not in text
    assert "`TOKENSPEED_MLA`" in text


def test_check_without_index_or_for_bots_is_skipped(check_context) -> None:
    rules_ = rules.load_builtin("default").checks.duplicates
    check = get_check("duplicates")
    assert check.run(_snapshot("x", []), rules_, check_context).status == "skip"
    check_context.open_prs = load_index_from_export.__class__  # any non-None index
    bot = _snapshot("Bump x", [], author="dependabot[bot]")
    assert "bot" in check.run(bot, rules_, check_context).summary


def test_nothing_found_says_so_in_one_line(tmp_path, check_context) -> None:
    check_context.open_prs = load_index_from_export(_write(tmp_path / "p.jsonl", _records()))
    rules_ = rules.load_builtin("default").checks.duplicates
    section = get_check("duplicates").run(
        _snapshot("Refactor the tokenizer pool", []), rules_, check_context
    )
    assert section.status == "pass" and section.findings == []
    assert section.summary.startswith("no likely duplicates or overlapping work among 4")


@pytest.mark.slow
def test_prbot_check_audits_against_an_export(git_repo, tmp_path, capsys) -> None:
    git_repo.commit({REGISTRY: "\n".join(f"line {i}" for i in range(80)) + "\n"}, "base")
    base = git_repo.git("rev-parse", "HEAD")
    lines = [f"line {i}" for i in range(80)]
    lines.insert(60, '    TOKENSPEED_MLA = "x.TokenSpeedBackend"')
    git_repo.commit({REGISTRY: "\n".join(lines) + "\n"}, "Add TokenSpeed MLA backend")
    export = _write(tmp_path / "prs.jsonl", _records())
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
    export = _write(
        tmp_path / "prs.jsonl",
        [
            *_records(),
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


def test_check_copes_with_a_huge_snapshot(tmp_path, check_context) -> None:
    check_context.open_prs = load_index_from_export(_write(tmp_path / "p.jsonl", _records()))
    files = [ChangedFile(f"vllm/gen/f{i}.py", additions=1) for i in range(3_000)]
    files.append(ChangedFile("logo.png", binary=True))
    snapshot = _snapshot("Add TokenSpeed MLA backend", files)
    snapshot.body = "x " * 200_000
    rules_ = rules.load_builtin("default").checks.duplicates
    section = get_check("duplicates").run(snapshot, rules_, check_context)
    assert section.status in ("pass", "warn")
