"""GitHub Actions as an engine, over real HTTP against the local GitHub test server: dispatch
with and without run details, jobs, zipped results, and workflow_run end to end."""

from __future__ import annotations

import json

import pytest
from github import Auth, Github

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.engines.actions import ActionsEngine, dispatch_key_in
from bot.engines.base import BuildRequest, EngineError
from bot.jobs.records import pending_build_id
from bot.report.render import MARKER

REPO = "acme/widgets"
KEY = "prbot-" + "0" * 32


@pytest.fixture
def actions(github_server):
    github_server.add_installation(INSTALLATION_ID, "acme")
    github_server.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
    token = github_server.create_installation_token(INSTALLATION_ID)
    gh = Github(
        auth=Auth.Token(token),
        base_url=github_server.url,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    engine = ActionsEngine(
        gh=gh,
        token=token,
        api_url=github_server.url,
        workflow="gpu.yml",
        actor=github_server.bot_login,  # the installation token's runs are the App bot's
    )
    return github_server, engine


def request(key: str = KEY, **env: str) -> BuildRequest:
    return BuildRequest(
        REPO,
        7,
        "c" * 40,
        "feature",
        "main",
        "prbot: GPU jobs for #7",
        ("smoke-b200",),
        meta_data={"prbot_dispatch": key},
        env=env,
    )


def test_a_dispatch_runs_the_base_branchs_workflow_and_names_the_run(actions) -> None:
    server, engine = actions
    ref = engine.create_build(request(PRBOT_BENCHMARK_RUNS="3"))
    (sent,) = server.actions.dispatches
    # The reviewed workflow on the base branch runs; the PR's commit is an input.
    assert sent["ref"] == "main" and sent["return_run_details"] is True
    assert sent["inputs"] == {
        "prbot_dispatch": KEY,
        "commit": "c" * 40,
        "pr": "7",
        "steps": '["smoke-b200"]',
        "benchmark_runs": "3",
    }
    run_id = int(ref.id.rsplit(":", 1)[1])
    assert ref.id == f"{REPO}:{run_id}" and ref.web_url.endswith(f"/actions/runs/{run_id}")
    assert engine.jobs(ref) == []
    server.actions.finish(
        run_id,
        "failure",
        jobs={"smoke-b200": "failure"},
        artifacts={"prbot-results": {"r1.json": b"[]", "r2.json": b"[1]", "notes.txt": b"x"}},
    )
    (job,) = engine.jobs(ref)
    assert (job.step_key, job.state) == ("smoke-b200", "failure")
    files, problems = engine.result_files(ref, job, limit=1000, max_files=10)
    assert [name for name, _ in files] == ["prbot-results/r1.json", "prbot-results/r2.json"]
    assert problems == []
    files, problems = engine.result_files(ref, job, limit=2, max_files=10)
    assert files == [] and "over 2" in problems[0]


def test_without_run_details_the_run_is_found_by_its_key(actions) -> None:
    server, engine = actions
    server.actions.details = False
    ref = engine.create_build(request())
    assert ref.id.startswith(f"{REPO}:") and dispatch_key_in(f"prbot {KEY}") == KEY
    # Not created yet (GitHub queues it): the key stands in until its workflow_run arrives.
    server.actions.immediate = False
    other = "prbot-" + "1" * 32
    pending = engine.create_build(request(other))
    assert pending.id == pending_build_id(other) and engine.jobs(pending) == []
    (started,) = server.actions.start_pending()
    found = engine.find_build(other, "c" * 40, repo=REPO)
    assert found is not None and found.id == f"{REPO}:{started}"
    assert engine.artifacts(pending, None) == ()
    # The run's actor is the App's bot: an engine acting for anyone else finds no run.
    for actor in ("maintainer", None):
        elsewhere = ActionsEngine(
            gh=engine.gh, token="t" * 40, api_url=server.url, workflow="gpu.yml", actor=actor
        )
        assert elsewhere.find_build(other, "c" * 40, repo=REPO) is None


def test_refusals_and_foreign_downloads(actions) -> None:
    server, engine = actions
    bad = BuildRequest(REPO, 7, "c" * 40, "f", "no-such-branch", "m", ("s",))
    with pytest.raises(EngineError, match="422"):
        engine.create_build(bad)
    from bot.engines.base import Artifact

    elsewhere = Artifact("1", "x", 10, "https://evil.example/zip")
    with pytest.raises(EngineError, match="not on"):
        engine.download(elsewhere, limit=100)
    with pytest.raises(EngineError, match="over"):
        engine.download(Artifact("1", "x", 1000, f"{server.url}/x"), limit=100)


RULES = """extends: vllm
features:
  dispatch: true
  actions: true
checks:
  requirements:
    enabled: false
  jobs:
    steps: null
    jobs:
      - name: GPU smoke (Actions)
        kind: gpu_smoke
        hardware: b200
        engine: actions
        run_if_changed: ["widgets/**"]
        step_key: smoke-b200
"""


def test_a_run_dispatched_on_actions_reports_through_workflow_run(tmp_path) -> None:
    with LocalStack(tmp_path / "stack", default_rules="vllm") as stack:
        gh = stack.github
        # An older server (the harder case): no run in the dispatch's answer, and the run
        # appears a moment later, known by the key in its name when its workflow_run arrives.
        gh.actions.details = gh.actions.immediate = False
        gh.create_repo(
            REPO,
            installation_id=INSTALLATION_ID,
            files={".github/prbot.yml": RULES, "widgets/core.py": "x = 1\n"},
        )
        gh.commit(REPO, "feature", {"widgets/core.py": "x = 2\n"})
        pull = gh.open_pull_request(
            REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
        )
        number = pull["number"]
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        wait_for(lambda: gh.actions.dispatches, what="a dispatch")
        wait_for(stack.idle, what="idle")
        gh.actions.start_pending()
        (run_id,) = gh.actions.runs
        (sent,) = gh.actions.dispatches
        assert json.loads(sent["inputs"]["steps"]) == ["smoke-b200"]
        assert sent["inputs"]["commit"] == pull["head"]["sha"]
        payload = gh.actions.finish(run_id, "success", jobs={"smoke-b200": "success"})
        assert stack.deliver("workflow_run", payload).status_code == 202

        def passed() -> bool:
            return any(
                MARKER in c["body"] and "✅ passed" in c["body"] for c in gh.comments(REPO, number)
            )

        wait_for(passed, what="the passed smoke job")
        wait_for(stack.idle, what="idle")
        runs = gh.check_runs(REPO, pull["head"]["sha"])
        assert len(runs) == 1 and runs[0]["status"] == "completed"
        assert len(gh.actions.dispatches) == 1


def test_a_failed_actions_job_is_classified_in_the_report(tmp_path) -> None:
    """A failure main shares (broken trunk) is grouped as such, with main's job linked, and
    the check run does not fail on it (issue 26: Actions jobs were never classified)."""
    with LocalStack(tmp_path / "stack", default_rules="vllm") as stack:
        gh = stack.github
        gh.create_repo(
            REPO,
            installation_id=INSTALLATION_ID,
            files={".github/prbot.yml": RULES, "widgets/core.py": "x = 1\n"},
        )
        gh.actions.seed_history(REPO, {"smoke-b200": "FFFPPPPPPP"}, workflow="prbot-gpu.yml")
        gh.commit(REPO, "feature", {"widgets/core.py": "x = 2\n"})
        pull = gh.open_pull_request(
            REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
        )
        number = pull["number"]
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        wait_for(lambda: gh.actions.dispatches, what="a dispatch")
        wait_for(stack.idle, what="idle")
        (run_id,) = [r.id for r in gh.actions.runs.values() if r.event == "workflow_dispatch"]
        payload = gh.actions.finish(run_id, "failure", jobs={"smoke-b200": "failure"})
        assert stack.deliver("workflow_run", payload).status_code == 202

        def grouped() -> str | None:
            for c in gh.comments(REPO, number):
                if MARKER in c["body"] and "broken trunk" in c["body"]:
                    return c["body"]
            return None

        wait_for(grouped, what="the classified failure")
        wait_for(stack.idle, what="idle")
        body = grouped()
        assert "same step on main" in body and "/actions/runs/" in body
        assert gh.actions.reruns == []  # broken on main: nothing to retry
        (check,) = gh.check_runs(REPO, pull["head"]["sha"])
        assert check["status"] == "completed" and check["conclusion"] != "failure"
