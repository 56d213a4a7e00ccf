"""Publishing after a crash finds what the earlier attempt made, and only that.

An attempt that crashed between making an effect and recording its id leaves a ``pending``
effect. The rerun must then find the sticky comment by marker **and** bot author, and the check
run by its name, on the local GitHub test server, and edit them instead of adding new ones.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from bot.checks import Section, Status
from bot.github.app import CHECK_RUN_NAME, GitHubApp
from bot.github.publish import Publisher
from bot.report.render import MARKER, Report, render_markdown
from bot.runtime.settings import Settings
from bot.store import state

REPO = "acme/widgets"
INSTALLATION = 1


@pytest.fixture
def world(github_server, engine, tmp_path):
    """(server, installation client, publisher, PR number, head) with an open PR."""
    gh = github_server
    gh.add_installation(INSTALLATION, "acme")
    gh.create_repo(REPO, installation_id=INSTALLATION, files={"a.py": "x = 1\n"})
    gh.commit(REPO, "feature", {"a.py": "x = 2\n"})
    pr = gh.open_pull_request(REPO, head_branch="feature", title="Change a", author="alice")
    key = tmp_path / "app.pem"
    key.write_text(gh.private_key_pem)
    settings = Settings(
        webhook_secrets=("s",),
        app_id=str(gh.app_id),
        private_key_path=key,
        github_api_url=gh.url,
        data_dir=tmp_path / "data",
        github_request_interval=0,
        github_write_interval=0,
    )
    app = GitHubApp(settings)
    client = app.installation(INSTALLATION)
    publisher = Publisher(engine, client, app.bot_login(), tmp_path / "locks")
    head = pr["head"]["sha"]
    state.observe_head(engine, REPO, pr["number"], head, datetime.now(UTC))
    return gh, client, publisher, pr["number"], head


def _report(number: int, head: str) -> tuple[Report, str]:
    report = Report(REPO, number, head, "0" * 40, [Section("changed_files", Status.PASS, "1 file")])
    return report, render_markdown(report)


def test_the_sticky_comment_is_found_by_marker_and_bot_author(world, engine):
    gh, client, publisher, number, head = world
    # A maintainer quoted the old report (marker included) before the bot's comments...
    quoted = gh.add_user_comment(REPO, number, "alice", f"{MARKER}\n> the report said this")
    # ...the bot said something else, then an attempt posted the report and crashed.
    other = client.create_comment(REPO, number, "Thanks! A report follows.")
    sticky = client.create_comment(REPO, number, f"{MARKER}\nthe earlier attempt's report")
    state.begin_effect(engine, f"comment:{REPO}#{number}", head)

    report, markdown = _report(number, head)
    result = publisher.publish(REPO, number, report, markdown)

    assert result.published and result.comment_id == sticky
    bodies = {c["id"]: c["body"] for c in gh.comments(REPO, number)}
    assert bodies == {
        quoted["id"]: f"{MARKER}\n> the report said this",
        other: "Thanks! A report follows.",
        sticky: markdown,
    }
    assert state.get_effect(engine, f"comment:{REPO}#{number}").external_id == str(sticky)


def test_a_check_run_made_before_a_crash_is_updated_not_duplicated(world, engine):
    gh, client, publisher, number, head = world
    ours = client.create_check_run(REPO, head, status="in_progress")
    # Another check on the same commit, newer, so it comes first in GitHub's listing.
    token = gh.create_installation_token(INSTALLATION)
    lint = httpx.post(
        f"{gh.url}/repos/{REPO}/check-runs",
        json={"name": "lint", "head_sha": head, "status": "in_progress"},
        headers={"Authorization": f"token {token}"},
    ).json()["id"]
    assert lint > ours
    state.begin_effect(engine, f"check_run:{REPO}@{head}", head)

    report, markdown = _report(number, head)
    result = publisher.publish(REPO, number, report, markdown)

    assert result.check_run_id == ours
    runs = {r["id"]: r for r in gh.check_runs(REPO, head)}
    assert set(runs) == {lint, ours}
    assert runs[ours]["name"] == CHECK_RUN_NAME and runs[ours]["status"] == "completed"
    assert runs[ours]["conclusion"] == "success"
    assert runs[lint]["status"] == "in_progress"  # someone else's run is left alone


def test_the_publisher_refuses_a_report_for_a_superseded_head(world, engine):
    gh, client, publisher, number, head = world
    newer = gh.push(REPO, number, {"b.py": "y = 1\n"})
    state.observe_head(engine, REPO, number, newer, datetime.now(UTC))
    report, markdown = _report(number, head)
    result = publisher.publish(REPO, number, report, markdown)
    assert not result.published and result.reason == f"superseded by {newer[:12]}"
    assert gh.comments(REPO, number) == [] and gh.check_runs(REPO) == []
