"""The CI-signal cases (bot/testing/ci_cases.py) on GitHub Actions: main's runs of prbot's
workflow seeded into the local GitHub from the cases' letters, two runs of the head (one
with the failures seen once, one with those re-run), all read back over HTTP through the
Actions engine and classified by the code the server runs. For tests and the benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from github import Auth, Github

from bot.engines.actions import RUN_JOBS, ActionsEngine
from bot.engines.base import BuildRef
from bot.jobs.ci_history import read_history
from bot.jobs.ci_signal import Classified, classify_build

WORKFLOW = "prbot-gpu.yml"
INSTALLATION = 26
HEAD = "c" * 40
SINGLE = {"F": "failure", "T": "timed_out", "P": "success", "C": "cancelled"}


@dataclass(frozen=True)
class ActionsRead:
    engine: ActionsEngine
    results: dict[str, Classified | None]  # case step -> its classification (None: none)
    runs: int  # main's runs read as history


def actions_engine(server, repo: str) -> ActionsEngine:  # noqa: ANN001 - bot.testing.FakeGitHub
    token = server.create_installation_token(INSTALLATION)
    gh = Github(
        auth=Auth.Token(token),
        base_url=server.url,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    return ActionsEngine(gh=gh, token=token, api_url=server.url, workflow=WORKFLOW)


def _head_run(server, repo: str, letters: dict[str, str], key: str) -> BuildRef:  # noqa: ANN001
    """prbot's run of the head (dispatched with ref main): first attempts, then one re-run
    of the failed jobs when a letter has a second attempt (R, X)."""
    actions = server.actions
    run_id = actions.add_run(
        repo,
        head_sha="d" * 40,
        title=f"prbot {key}",
        event="workflow_dispatch",
        workflow=WORKFLOW,
    )
    first = {s: "failure" if x in "RX" else SINGLE[x] for s, x in letters.items()}
    actions.finish(run_id, "failure", jobs=first)
    second = {s: "success" if x == "R" else "failure" for s, x in letters.items() if x in "RX"}
    if second:
        actions.rerun_failed(run_id)
        actions.finish(run_id, "failure", jobs=second)
    html = f"{server.url}/{repo}/actions/runs/{run_id}"
    return BuildRef("actions", f"{repo}:{run_id}", None, html)


def classify_cases(server, repo: str, cases: Sequence, *, limit: int = 50) -> ActionsRead:  # noqa: ANN001
    """Seed ``cases`` into ``repo`` (created here) and classify each case's head failure."""
    server.add_installation(INSTALLATION, repo.split("/")[0])
    server.create_repo(repo, installation_id=INSTALLATION, files={"a.py": "x = 1\n"})
    usable = [c for c in cases if c.on_actions]
    server.actions.seed_history(repo, {c.step: c.main for c in usable if c.main}, workflow=WORKFLOW)
    longest = max((len(c.dispatched_on_main) for c in usable), default=0)
    for i in reversed(range(longest)):
        jobs = {
            c.step: SINGLE[c.dispatched_on_main[i]] for c in usable if i < len(c.dispatched_on_main)
        }
        run_id = server.actions.add_run(
            repo,
            head_sha=f"{0xD000 + i:040x}",
            title=f"prbot prbot-{i:032x}",
            event="workflow_dispatch",
            workflow=WORKFLOW,
        )
        server.actions.finish(run_id, "failure", jobs=jobs)
    RUN_JOBS._kept.clear()  # a cold read, as a fresh process makes
    engine = actions_engine(server, repo)
    listed = engine.branch_builds(repo, "main", limit=limit)
    past = read_history(listed.builds, "main", limit=limit, exclude_commit=HEAD)
    once = {c.step: c.head for c in usable if c.head in "FT"}
    twice = {c.step: c.head for c in usable if c.head in "RX"}
    found: dict[str, Classified] = {}
    for letters, key in ((once, "prbot-" + "1" * 32), (twice, "prbot-" + "2" * 32)):
        if not letters:
            continue
        head = engine.head_build(_head_run(server, repo, letters, key))
        for case in usable:
            if case.step not in letters:
                continue
            merge_base = (
                f"{0xB000 + case.merge_base_at:040x}" if case.merge_base_at is not None else None
            )
            for result in classify_build(head, past, merge_base=merge_base):
                if result.name == case.step:
                    found[case.step] = result
    return ActionsRead(engine, {c.step: found.get(c.step) for c in usable}, len(past.builds))
