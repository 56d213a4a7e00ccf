"""The check run as GitHub stores it: in progress while the checks run, then completed with
one annotation per located finding, sent 50 at a time, once, on one run per head."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from bot.checks import Section, Status
from bot.github.app import GitHubApp
from bot.github.publish import Publisher
from bot.report.render import Report, render_markdown
from bot.runtime.settings import Settings
from bot.store import state
from bot.store.db import make_engine, migrate

INSTALLATION = 1


@pytest.fixture(scope="module")
def github(tmp_path_factory):
    """One test server for the module (its key pair is the slow part); a repo per test."""
    from bot.testing import FakeGitHub

    running = FakeGitHub(root=tmp_path_factory.mktemp("github")).start()
    running.add_installation(INSTALLATION, "acme")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def app(github, tmp_path_factory):
    key = tmp_path_factory.mktemp("key") / "app.pem"
    key.write_text(github.private_key_pem)
    settings = Settings(
        webhook_secrets=("unused-here",),
        app_id=str(github.app_id),
        private_key_path=key,
        github_api_url=github.url,
        github_request_interval=0,
        github_write_interval=0,
    )
    return GitHubApp(settings)


_names = itertools.count()


@pytest.fixture
def repo_and_publisher(github, app, tmp_path):
    repo = f"acme/widgets-{next(_names)}"
    files = {f"pkg/mod{i}.py": "x = 1\n" * 5 for i in range(3)}
    github.create_repo(repo, installation_id=INSTALLATION, files=files)
    head = github.commit(repo, "feature", {"pkg/new.py": "y = 2\n"}, "the PR")
    pull = github.open_pull_request(repo, head_branch="feature", title="t", author="mallory")
    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    publisher = Publisher(engine, app.installation(INSTALLATION), app.bot_login(), tmp_path)
    yield repo, pull["number"], head, publisher
    engine.dispose()


def _report(head: str, located: int) -> Report:
    """An integration warning with ``located`` new names (each at a line) and a failing
    requirement pin, plus a pass section whose finding has no line."""
    report = Report("acme/widgets", 1, head, "b" * 40)  # the repo name is not sent
    findings = [
        {
            "rule": "backend",
            "symbol": f"NAME_{i} @octocat <img src=x>\u200d\u202e\n",
            "where": "the `registry`",
            "missing_in": ["pkg/mod0.py"],
            "path": f"pkg/mod{i % 3}.py",
            "line": i + 1,
        }
        for i in range(located)
    ]
    report.sections.append(Section("integration", Status.WARN, "new names", findings=findings))
    pin = {"name": "torch", "from": "2.8", "to": "2.9", "file": "req.txt", "line": 3}
    base_pin = {**pin, "name": "numpy", "side": "base"}
    report.sections.append(
        Section(
            "requirements",
            Status.FAIL,
            "pins changed",
            findings=[{"platform": "cuda", "changed": [pin, base_pin]}],
        )
    )
    report.sections.append(Section("changed_files", Status.PASS, "1 file", findings=[{"a": 1}]))
    return report


def test_in_progress_then_completed_on_one_run(github, repo_and_publisher):
    repo, number, head, publisher = repo_and_publisher
    run_id = publisher.start(repo, number, head)
    [run] = github.check_runs(repo, head)
    assert run["id"] == run_id and run["status"] == "in_progress" and run["conclusion"] is None
    report = _report(head, 3)
    publisher.publish(repo, number, report, render_markdown(report))
    [run] = github.check_runs(repo, head)
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    assert github.check_run_history(repo, run_id) == ["in_progress", "completed"]
    # A re-run of the same head reuses the run: back in progress, then completed again.
    assert publisher.start(repo, number, head) == run_id
    [run] = github.check_runs(repo, head)
    assert run["status"] == "in_progress" and run["conclusion"] is None
    publisher.publish(repo, number, report, render_markdown(report))
    assert len(github.check_runs(repo, head)) == 1


def test_annotations_batched_leveled_escaped_and_sent_once(github, repo_and_publisher):
    repo, number, head, publisher = repo_and_publisher
    report = _report(head, 120)
    publisher.start(repo, number, head)
    publisher.publish(repo, number, report, render_markdown(report))
    [run] = github.check_runs(repo, head)
    annotations = github.check_run_annotations(repo, run["id"])
    # 120 located integration findings and the head-side pin; the base-side pin has no
    # line at head and the pass finding no line at all. Over 50: several requests (the server
    # refuses more than 50 in one, as GitHub does).
    assert len(annotations) == 121 == run["output"]["annotations_count"]
    levels = {a["path"]: a["annotation_level"] for a in annotations}
    assert levels["pkg/mod0.py"] == "warning" and levels["req.txt"] == "failure"
    pin = next(a for a in annotations if a["path"] == "req.txt")
    assert pin["start_line"] == pin["end_line"] == 3 and "torch: 2.8 → 2.9" in pin["message"]
    first = annotations[0]
    assert first["start_line"] == 1 and first["title"] == "prbot: Integration checklist"
    # Plain text, as GitHub shows it: no entities or backslashes to show literally.
    assert first["message"] == (
        "NAME_0 @octocat <img src=x> is not yet in the `registry` (pkg/mod0.py)"
    )
    # A replay of the same job (a crash after publishing, or /recheck on this head) adds none.
    publisher.publish(repo, number, report, render_markdown(report))
    assert len(github.check_run_annotations(repo, run["id"])) == 121
    assert len(github.check_runs(repo, head)) == 1


def test_a_start_lost_before_its_record_finds_the_run_it_made(github, repo_and_publisher):
    repo, number, head, publisher = repo_and_publisher
    publisher.start(repo, number, head)
    # The run exists on GitHub, but the attempt died before recording its id.
    key = f"check_run:{repo}@{head}"
    state.forget_effect(publisher.engine, key)
    state.begin_effect(publisher.engine, key, head)
    report = _report(head, 1)
    publisher.publish(repo, number, report, render_markdown(report))
    [run] = github.check_runs(repo, head)
    assert run["status"] == "completed"


def test_a_superseded_head_gets_no_check_run(github, repo_and_publisher):
    repo, number, head, publisher = repo_and_publisher
    state.observe_head(publisher.engine, repo, number, "c" * 40, datetime.now(UTC))
    assert publisher.start(repo, number, head) is None
    assert github.check_runs(repo, head) == []


def test_a_run_started_for_a_head_overtaken_while_it_ran_is_cancelled(github, repo_and_publisher):
    repo, number, head, publisher = repo_and_publisher
    publisher.start(repo, number, head)
    newer = "c" * 40
    state.observe_head(publisher.engine, repo, number, newer, datetime.now(UTC))
    report = _report(head, 1)
    result = publisher.publish(repo, number, report, render_markdown(report))
    assert not result.published
    # The older commit does not show a check running for ever, nor the older report.
    [run] = github.check_runs(repo, head)
    assert (run["status"], run["conclusion"]) == ("completed", "cancelled")
    assert run["output"]["title"] == "prbot: superseded"


def test_a_refused_annotation_batch_still_completes_the_run(github, repo_and_publisher):
    repo, number, head, publisher = repo_and_publisher
    report = _report(head, 60)
    # GitHub refuses the first batch (422), e.g. for a path it does not know.
    github.inject("PATCH", r"/repos/acme/widgets-\d+/check-runs/\d+", status=422, times=1)
    publisher.start(repo, number, head)
    publisher.publish(repo, number, report, render_markdown(report))
    [run] = github.check_runs(repo, head)
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    # The second batch went through; the refused one is not retried forever.
    assert len(github.check_run_annotations(repo, run["id"])) == 61 - 50
