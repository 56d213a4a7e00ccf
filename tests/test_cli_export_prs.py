"""``prbot export-prs`` against the local GitHub test server, read back by the audit."""

from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.duplicates.export import load_export
from bot.testing.github_server import FakeGitHub

REPO = "acme/widgets"


@pytest.fixture(scope="module")
def server():
    # One server for the module: no test changes its pull requests.
    with FakeGitHub() as gh:
        gh.add_installation(1, "acme")
        gh.create_repo(REPO, installation_id=1, files={"selector.py": "def pick():\n    pass\n"})
        gh.commit(REPO, "fast-pick", {"selector.py": "def pick():\n    return 1\n"})
        gh.open_pull_request(
            REPO, head_branch="fast-pick", title="Faster pick", body="Fixes #7", author="ana"
        )
        gh.commit(REPO, "docs", {"docs/guide.md": "# Guide\n"})
        gh.open_pull_request(REPO, head_branch="docs", title="A guide", author="bo")
        yield gh


@pytest.fixture
def github(server: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    monkeypatch.setenv("PRBOT_GITHUB_API_URL", server.url)
    monkeypatch.setenv("GITHUB_TOKEN", server.create_installation_token(1))
    monkeypatch.delenv("GH_TOKEN", raising=False)
    return server


def test_export_writes_records_the_audit_reads(github, tmp_path, capsys) -> None:
    out = tmp_path / "prs.jsonl"
    assert main(["export-prs", REPO, "--out", str(out)]) == 0
    assert "2 pull requests exported" in capsys.readouterr().err

    lines = out.read_text().splitlines()
    assert [json.loads(line)["number"] for line in lines] == [2, 1]  # newest first
    records = {record.number: record for record in load_export(out)}
    first = records[1]
    assert (first.title, first.author) == ("Faster pick", "ana")
    (changed,) = first.files
    assert changed.path == "selector.py" and changed.additions == 1 and changed.deletions == 1
    assert "+    return 1" in (changed.patch or "")

    assert main(["duplicates", "--prs", str(out), "--format", "json"]) == 0
    numbers = {result["number"] for result in json.loads(capsys.readouterr().out)["results"]}
    assert numbers == {1, 2}


def test_limit_and_no_patches(github, capsys) -> None:
    assert main(["export-prs", REPO, "--limit", "1", "--no-patches"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    record = json.loads(line)
    assert record["number"] == 2
    assert record["files"] == [{"path": "docs/guide.md", "additions": 1, "deletions": 0}]


def test_an_unknown_repository_is_one_line(github, capsys) -> None:
    assert main(["export-prs", "acme/nothing-here"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert errors == ["prbot: error: GitHub answered 404 for acme/nothing-here: Not Found"]


@pytest.mark.parametrize("name", ["widgets", "acme/", "../etc/passwd", "a/b/c"])
def test_a_malformed_repository_name_is_refused_before_any_request(github, name, capsys) -> None:
    github.reset_calls()
    assert main(["export-prs", name]) == 2
    assert capsys.readouterr().err.strip() == f"prbot: error: {name!r} is not OWNER/REPO"
    assert github.count_calls() == 0
