"""``prbot check --pr``: a PR on the local GitHub test server fetched into a mirror and checked."""

from __future__ import annotations

import argparse
import json

import pytest

from bot.cli import main
from bot.cli.check_pr import parse_pr, snapshot_for_pull
from bot.cli.common import CliError
from bot.github.pulls import pull_summary
from bot.local.mirror import RepoMirror
from bot.testing.github_server import FakeGitHub

REPO = "acme/widgets"


@pytest.fixture(scope="module")
def server():
    with FakeGitHub() as gh:
        gh.add_installation(1, "acme")
        gh.create_repo(REPO, installation_id=1, files={"core.py": "x = 1\n"})
        gh.commit(REPO, "faster", {"core.py": "x = 2\n", "extra.py": "y = 1\n"}, "faster")
        gh.open_pull_request(
            REPO,
            head_branch="faster",
            title="Faster core",
            author="ana",
            author_association="CONTRIBUTOR",
        )
        gh.commit(REPO, "member", {"docs.md": "# d\n"}, "docs")
        gh.open_pull_request(
            REPO, head_branch="member", title="Docs", author="octo", author_association="MEMBER"
        )
        yield gh


@pytest.fixture
def github(server, monkeypatch, tmp_path):
    monkeypatch.setenv("PRBOT_GITHUB_API_URL", server.url)
    monkeypatch.setenv("GITHUB_TOKEN", server.create_installation_token(1))
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.setenv("PRBOT_DATA_DIR", str(tmp_path / "data"))
    return server


def test_check_pr_fetches_the_pr_and_reports_on_its_head(github, tmp_path, capsys):
    assert main(["check", "--pr", f"{REPO}#1", "--format", "json", "--no-cache"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    head = github.repos[REPO].pulls[1].head_sha
    assert (report["repo"], report["pr"], report["head_sha"]) == (REPO, 1, head)
    changed = next(s for s in report["sections"] if s["check"] == "changed_files")
    assert changed["summary"].startswith("2 files, +2/−1")
    assert f"reading {REPO}#1" in err
    # The service's own mirror layout, under the data dir.
    assert (tmp_path / "data" / "mirrors" / "acme" / "widgets.git" / "HEAD").is_file()


def test_a_pr_url_names_the_pr_and_only_its_path_is_read(github, capsys):
    url = f"https://github.example/{REPO}/pull/1/files"
    assert main(["check", "--pr", url, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"prbot:head={github.repos[REPO].pulls[1].head_sha}" in out


def test_trust_comes_from_the_authors_association(github, tmp_path):
    mirror = RepoMirror(tmp_path / "m", REPO, github.git_url(REPO))
    args = argparse.Namespace(rules=None, default_rules=None)
    trusted = {}
    for number in (1, 2):
        raw = github.shapes.pull(github.repos[REPO], github.repos[REPO].pulls[number], [])
        pull = pull_summary(raw)
        token = github.create_installation_token(1)
        mirror.fetch_pull(token, number, pull["base_ref"], pull["base_sha"], pull["head_sha"])
        snapshot, _ = snapshot_for_pull(mirror, REPO, pull, args)
        trusted[number] = snapshot.trusted
        snapshot.close()
    assert trusted == {1: False, 2: True}  # a contributor's head is not trusted; a member's is


@pytest.mark.parametrize(
    "spec",
    ["acme/widgets", "acme/widgets#0", "acme/widgets#x", "../x#1", "https://h/acme/w/issues/1"],
)
def test_malformed_pr_specs_are_one_line(spec):
    with pytest.raises(CliError, match="is not OWNER/REPO#N"):
        parse_pr(spec)


def test_errors_are_one_line(github, capsys):
    assert main(["check", "--pr", f"{REPO}#99", "--no-cache"]) == 2
    [error] = errors(capsys)
    assert error == f"prbot: error: --pr: GitHub answered 404 for {REPO}#99: Not Found"
    assert main(["check", "--pr", f"{REPO}#1", "--repo", "."]) == 2
    assert "--pr takes the place of --repo" in capsys.readouterr().err
    assert main(["check", "--repo", "."]) == 2
    assert "missing: --base, --head" in capsys.readouterr().err


def test_a_token_git_refuses_is_one_line(github, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", "wrong")
    assert main(["check", "--pr", f"{REPO}#1", "--no-cache"]) == 2
    [error] = errors(capsys)
    assert error.startswith("prbot: error: --pr: GitHub answered 401") and "wrong" not in error


def errors(capsys) -> list[str]:
    """The error lines on stderr (the progress lines around them aside)."""
    return [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
