"""Publishing through PyGithub to the local GitHub test server: what GitHub ends up storing.

Every assertion reads the comment and check run back from the server, so escaping, the
conclusion and the size bounds are checked where they matter, not in one check's output.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re

import pytest
from gendocs_helpers import DOC, NEW_BACKEND_ENTRY, NEW_BACKEND_MODULE, fixture_files, replaced
from markdown_inert import live_markup

from bot.checks import CheckContext, Section, Status, all_checks
from bot.core.snapshot import snapshot_from_checkout
from bot.duplicates.export import load_index_from_export
from bot.gendocs.config import DocRule
from bot.github.app import GitHubApp
from bot.github.publish import Publisher
from bot.report import rules
from bot.report.render import Report, render_markdown
from bot.report.runner import run_checks
from bot.runtime.settings import Settings
from bot.store.db import make_engine, migrate

INSTALLATION = 1
HTML_BASE = "https://github.com"
HOSTILE = "![t](http://x/y.png) @octocat <img src=x> [click](http://x)"
HOSTILE_MARKER = f'--8<-- "gen:{HOSTILE}"'
# A path can hold everything but "//": a relative link, an image, a mention and a www. host.
HOSTILE_PATH = "docs/![t](y.png) @octocat <img src=x> [click](x) www.evil.example.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One test server for the module (each test gets its own repository on it)."""
    from bot.testing import FakeGitHub

    running = FakeGitHub(root=tmp_path_factory.mktemp("github")).start()
    running.add_installation(INSTALLATION, "acme")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def publisher(server, tmp_path_factory):
    root = tmp_path_factory.mktemp("prbot")
    engine = make_engine(f"sqlite:///{root / 'prbot.sqlite'}")
    migrate(engine)
    key = root / "app.pem"
    key.write_text(server.private_key_pem)
    settings = Settings(
        webhook_secrets=("unused-here",),
        app_id=str(server.app_id),
        private_key_path=key,
        github_api_url=server.url,
        github_request_interval=0,
        github_write_interval=0,
    )
    app = GitHubApp(settings)
    yield Publisher(engine, app.installation(INSTALLATION), app.bot_login(), root / "locks")
    engine.dispose()


_names = itertools.count()


def open_pr(server, base_files: dict[str, str], head_files: dict[str, str | None], title: str):
    """A new repository on the test server with one PR; (repo, number, base sha, head sha)."""
    name = f"acme/widgets-{next(_names)}"
    repo = server.create_repo(name, installation_id=INSTALLATION, files=base_files)
    base = repo.branch_sha("main")
    head = server.commit(name, "feature", head_files, "the PR")
    pull = server.open_pull_request(name, head_branch="feature", title=title, author="mallory")
    return name, pull["number"], base, head


def stored_check_run(server, repo: str, head: str) -> dict:
    [run] = server.check_runs(repo, head)
    return run


# --- item: fail beats error; error never passes ---------------------------------------------

CONCLUSION_CASES = [
    # (section statuses, GitHub conclusion, title counts, comment icon)
    ([Status.ERROR, Status.FAIL, Status.PASS], "failure", "1 fail, 1 error, 1 pass", "❌"),
    ([Status.FAIL, Status.ERROR], "failure", "1 fail, 1 error", "❌"),
    ([Status.ERROR, Status.WARN, Status.PASS], "action_required", "1 error, 1 warn, 1 pass", "💥"),
    ([Status.ERROR, Status.SKIP], "action_required", "1 error, 1 skip", "💥"),
    ([Status.WARN, Status.PASS], "neutral", "1 warn, 1 pass", "⚠️"),
    ([Status.PASS, Status.SKIP], "success", "1 pass, 1 skip", "✅"),
]


@pytest.mark.parametrize(("statuses", "conclusion", "counts", "icon"), CONCLUSION_CASES)
def test_fail_beats_error_and_error_never_passes(
    server, publisher, statuses, conclusion, counts, icon
):
    repo_name, number, base, head = open_pr(server, {"a.py": "a\n"}, {"a.py": "b\n"}, "Change a")
    names = ["duplicates", "requirements", "generated_docs"]
    sections = [Section(n, s, f"{s} here") for n, s in zip(names, statuses, strict=False)]
    report = Report(repo_name, number, head, base, sections)
    markdown = render_markdown(report)
    assert publisher.publish(repo_name, number, report, markdown).published

    run = stored_check_run(server, repo_name, head)
    assert run["status"] == "completed" and run["conclusion"] == conclusion
    assert run["output"]["title"] == f"prbot: {counts}"
    [comment] = server.comments(repo_name, number)
    title_line = next(line for line in comment["body"].splitlines() if line.startswith("### "))
    assert title_line.startswith(f"### {icon} prbot: {counts} · ")


def test_a_rerun_that_turns_a_failure_into_an_error_still_blocks(server, publisher):
    """The attack of issue 8: make a failing check crash on the next push of the same head."""
    repo_name, number, base, head = open_pr(server, {"a.py": "a\n"}, {"a.py": "b\n"}, "Change a")
    failing = Report(
        repo_name, number, head, base, [Section("generated_docs", Status.FAIL, "drift")]
    )
    publisher.publish(repo_name, number, failing, render_markdown(failing))
    crashed = Report(
        repo_name,
        number,
        head,
        base,
        [
            Section("generated_docs", Status.ERROR, "check crashed: RecursionError"),
            Section("integration", Status.PASS, "nothing new to wire in"),
        ],
    )
    publisher.publish(repo_name, number, crashed, render_markdown(crashed))
    run = stored_check_run(server, repo_name, head)  # the same run, edited in place
    assert run["conclusion"] not in ("success", "neutral", "skipped")


# --- item: one escaping for everything that goes to GitHub ----------------------------------


def hostile_pr(server, tmp_path):
    """A real PR whose doc marker, changed path and (another PR's) title are hostile."""
    base_files = fixture_files()
    base_files[DOC] = f"# Attention backends\n\n## Standard\n\n{HOSTILE_MARKER}\n"
    registry = base_files["vllm/v1/attention/backends/registry.py"]
    head_files = {
        "vllm/v1/attention/backends/registry.py": replaced(registry, *NEW_BACKEND_ENTRY),
        NEW_BACKEND_MODULE[0]: NEW_BACKEND_MODULE[1],
        HOSTILE_PATH: "hello\n",
    }
    repo_name, number, base, head = open_pr(server, base_files, head_files, HOSTILE)
    repo = server.repos[repo_name]
    snapshot = snapshot_from_checkout(repo.git.path, base, head, repo_name=repo_name, trusted=True)
    snapshot = dataclasses.replace(snapshot, number=number, title=HOSTILE, author="mallory")
    export = tmp_path / "open-prs.jsonl"
    other = {
        "number": number + 1,
        "title": HOSTILE,
        "body": HOSTILE,
        "author": "@octocat",
        "state": "open",
        "files": [{"path": HOSTILE_PATH, "additions": 1, "deletions": 0}],
    }
    export.write_text(json.dumps(other) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    context = CheckContext(work_dir=work, open_prs=load_index_from_export(export))
    ruleset = rules.load_builtin("vllm")
    ruleset.checks.generated_docs.docs = [
        DocRule(path=DOC, mode="markers", feeds=["vllm/v1/attention/backends/**/*.py"])
    ]
    ruleset.checks.generated_docs.hooks = []
    checks = tuple(c for c in all_checks() if c.name != "requirements")
    return repo_name, number, snapshot, run_checks(snapshot, ruleset, context, checks=checks)


def test_user_text_reaches_the_check_run_and_comment_inert(server, publisher, tmp_path):
    repo_name, number, snapshot, report = hostile_pr(server, tmp_path)
    summaries = {s.check: s.summary for s in report.sections}
    # The hostile text really is in the report's data, so the test exercises the escaping.
    assert HOSTILE in summaries["generated_docs"]
    assert "@octocat" in summaries["changed_files"] or any(
        HOSTILE_PATH in f.get("files", []) for s in report.sections for f in s.findings
    )
    markdown = render_markdown(report, html_base=HTML_BASE)
    publisher.publish(repo_name, number, report, markdown)

    run = stored_check_run(server, repo_name, snapshot.head_sha)
    own = f"{HTML_BASE}/{repo_name}/"
    output = run["output"]
    assert "gen:" in output["summary"] and "octocat" in output["summary"]
    for field in ("title", "summary", "text"):
        assert live_markup(output[field], own_links=own) == [], field
    # Annotations are plain text on GitHub (no Markdown, HTML or mentions): sent as one
    # plain line, without the entities and backslashes that would show there literally.
    annotations = server.check_run_annotations(repo_name, run["id"])
    assert output["annotations_count"] == len(annotations)
    for annotation in annotations:
        for key in ("title", "message"):
            assert "&lt;" not in annotation[key] and "\n" not in annotation[key], annotation
    [comment] = server.comments(repo_name, number)
    assert live_markup(comment["body"], own_links=own) == []
    assert "duplicates" in summaries and "octocat" in comment["body"]


# --- item: one summary cannot fill the comment ----------------------------------------------


def test_thousands_of_new_imports_keep_the_summary_short_and_other_details(
    server, publisher, tmp_path
):
    modules = [f"thirdparty_{i:04d}" for i in range(2_500)]
    imports = "".join(f"import {m}\n" for m in modules)
    base_files = {"vllm/__init__.py": "", "requirements/common.txt": "numpy\n"}
    head_files = {"vllm/new_feature.py": imports}
    # Enough changed files that the changed-files section has details worth keeping.
    head_files.update({f"tests/test_part_{i}.py": f"x = {i}\n" for i in range(10)})
    repo_name, number, base, head = open_pr(server, base_files, head_files, "Many imports")
    repo = server.repos[repo_name]
    snapshot = snapshot_from_checkout(repo.git.path, base, head, repo_name=repo_name, trusted=True)
    snapshot = dataclasses.replace(snapshot, number=number)
    work = tmp_path / "work"
    work.mkdir()
    checks = tuple(c for c in all_checks() if c.name in ("integration", "changed_files"))
    report = run_checks(snapshot, rules.load_builtin("vllm"), CheckContext(work), checks)
    integration = next(s for s in report.sections if s.check == "integration")
    assert len(integration.findings) == 2_500
    assert len(integration.summary) <= 400
    assert re.search(r"; and 2,\d{3} more$", integration.summary), integration.summary

    markdown = render_markdown(report, html_base=HTML_BASE)
    publisher.publish(repo_name, number, report, markdown)
    [comment] = server.comments(repo_name, number)
    body = comment["body"]
    assert len(body) <= 65_000
    # The other section's details survive whole, and the long one says what it left out
    # (integration stops its table itself; the report's per-section budget is the backstop).
    assert "tests/test_part_9.py" in body
    assert "more in the JSON report" in body or "more characters of details not shown" in body
    assert body.count("<details>") == body.count("</details>")
    assert body.rstrip().endswith("to run again.</sub>")
    run = stored_check_run(server, repo_name, head)
    assert len(run["output"]["summary"]) < 2_000
    assert "tests/test_part_9.py" in run["output"]["text"]
