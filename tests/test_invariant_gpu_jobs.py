"""GPU-job promises on the code production runs: who may approve by default, a dispatch
whose jobs another worker claimed creates no build, benchmark verdicts as documented (a
95% interval, a regression from exactly the factor slower), bounded result files, and which
Buildkite steps a change selects."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from bot.engines.buildkite import BuildkiteEngine
from bot.jobs.benchmark_results import ResultError, parse_results
from bot.jobs.buildkite_steps import dependency_matches, matching_evidence, parse_step_file
from bot.jobs.compare import DEFAULT_FACTOR, REGRESSION, compare
from bot.jobs.planner import Head, WantedJob, plan
from bot.store import jobs as store
from bot.testing.buildkite_server import FakeBuildkite
from bot.worker.ci.dispatch import PullContext, execute
from bot.worker.handlers.issue_comment import on_issue_comment
from bot.worker.handlers.registry import Event

REPO = "acme/widgets"


# --- /approve-gpu: write access by default (docs/gpu-jobs.md; commands.approve_gpu) ---------
@pytest.fixture
def pr(app_context, github_server):
    # No .github/prbot.yml: the built-in defaults apply.
    github_server.create_repo(REPO, installation_id=1, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"}, "change a")
    return github_server.open_pull_request(
        REPO, head_branch="feature", title="Change a", author="alice"
    )


def _comment(github_server, number: int, author: str, body: str) -> Event:
    comment = github_server.add_user_comment(REPO, number, author, body)
    payload = github_server.issue_comment_event(REPO, number, comment)
    return Event("issue_comment", "created", payload, delivery_id=comment["id"])


def _replies(github_server, number: int) -> list[str]:
    return [c["body"] for c in github_server.comments(REPO, number) if c["user"]["type"] == "Bot"]


def test_the_pr_author_cannot_approve_their_own_gpu_jobs_under_the_defaults(
    app_context, github_server, pr
):
    number, head = pr["number"], pr["head"]["sha"]
    for _ in range(2):  # two comments: refused each time, answered once per head
        on_issue_comment(app_context, _comment(github_server, number, "alice", "/approve-gpu"))
    assert store.approvers(app_context.engine, REPO, number, head) == []
    assert [j for j in app_context.queue.jobs(limit=100) if j.kind == "jobs_dispatch"] == []
    [refusal] = _replies(github_server, number)
    assert refusal.startswith("@alice") and "write access" in refusal
    # A maintainer with write access gets past the policy (to the approval's own checks).
    github_server.set_permission(REPO, "maria", "write")
    on_issue_comment(app_context, _comment(github_server, number, "maria", "/approve-gpu"))
    assert not any(reply.startswith("@maria only") for reply in _replies(github_server, number))


# --- dispatch: a claim decides who creates the build --------------------------------------
HEAD_SHA, BASE_SHA = "a" * 40, "b" * 40
SMOKE = WantedJob("V1 attention (B200)", "gpu_smoke", "b200", "buildkite", "r", "v1-attention-b200")
TRUSTED = Head(REPO, 7, HEAD_SHA, BASE_SHA, trusted=True, benchmark_runs=3)


def test_a_dispatch_whose_jobs_another_worker_claimed_creates_no_build(engine, tmp_path):
    # Two workers plan the same head at once (a redelivery, a retry): both plans say
    # "dispatch"; only the one that wins the claims may create a build.
    planned = plan([SMOKE], TRUSTED, {}, mode="event", key_secret=b"one installation")
    same_plan = plan([SMOKE], TRUSTED, {}, mode="event", key_secret=b"one installation")
    with FakeBuildkite(token="bk-api") as server:
        client = BuildkiteEngine(
            organization="acme", pipeline="ci", token="bk-api", api_url=server.url
        )

        def run(planned_now):
            return execute(
                engine,
                planned_now,
                TRUSTED,
                PullContext("feature", "main", ()),
                engines=lambda name: client,
                current_head=lambda: HEAD_SHA,
                lock_dir=tmp_path / "locks",
            )

        assert run(planned).created == 1
        assert run(same_plan).created == 0  # every claim was taken by the first
        assert server.count_calls("POST", "/builds") == 1
    [record] = store.records_for_head(engine, REPO, 7, HEAD_SHA)
    assert record.build_id is not None


# --- benchmark verdicts (docs/checks/jobs.md: bot/jobs/compare.py) ----------------------
BASE_RUNS = [1.0, 1.02, 0.98, 1.01, 0.99]


def test_every_ratio_has_a_95_percent_interval():
    # Five runs a side with equal spread: Welch's test has exactly 8 degrees of freedom, and
    # the 97.5th percentile of Student's t with 8 degrees of freedom is 2.306004.
    head = [t * 1.05 for t in BASE_RUNS]
    [result] = compare({"cfg": (BASE_RUNS, head)})
    logs = [math.log(t) for t in BASE_RUNS]
    standard_error = math.sqrt(2 * statistics.variance(logs) / len(logs))
    margin = 2.306004 * standard_error
    assert result.low == pytest.approx(1.05 * math.exp(-margin), rel=1e-6)
    assert result.high == pytest.approx(1.05 * math.exp(margin), rel=1e-6)


def test_exactly_the_factor_slower_and_significant_is_a_regression():
    [at] = compare({"cfg": (BASE_RUNS, [t * 1.05 for t in BASE_RUNS])}, factor=0.05)
    assert at.ratio == pytest.approx(1.05, abs=1e-12) and at.verdict == REGRESSION
    [under] = compare({"cfg": (BASE_RUNS, [t * 1.049 for t in BASE_RUNS])}, factor=0.05)
    assert under.verdict != REGRESSION and under.ratio < 1.05
    # The rules' default factor is 3%: a 5% slowdown is past it, not on it.
    [default] = compare({"cfg": (BASE_RUNS, [t * 1.05 for t in BASE_RUNS])})
    assert DEFAULT_FACTOR == 0.03 and default.verdict == REGRESSION


# --- result files are parsed as data, bounded in size -------------------------------------
def test_a_results_file_over_the_size_bound_is_refused_by_the_parser_itself():
    # The download is bounded too (5 MB an artifact); this guard must hold on its own.
    entry = {"config": {"backend": "FAST_MLA", "batch_spec": "q1"}, "mean_time": 1.0}
    small = json.dumps([entry])
    assert parse_results(small, "run-1.json") == {"FAST_MLA q1": 1.0}
    huge = json.dumps([entry] + [{"pad": "x" * 1000}] * 20_000)
    assert len(huge) > 20_000_000
    with pytest.raises(ResultError, match=r"^run-1\.json: over 20 MB$"):
        parse_results(huge, "run-1.json")
    with pytest.raises(ResultError, match="over 20 MB"):
        parse_results(huge.encode(), "run-1.json")


# --- Buildkite steps: which change selects which step -------------------------------------
def test_an_empty_dependency_string_selects_nothing_in_either_reading():
    text = (
        "steps:\n- label: x\n  key: blank-dependency\n  device: b200\n"
        '  source_file_dependencies: [""]\n'
    )
    for mode in ("substring", "prefix"):
        assert not dependency_matches("", "vllm/v1/attention/x.py", mode)
    steps, _problems = parse_step_file(text, ".buildkite/test_areas/x.yaml")
    assert [step.key for step in steps] == ["blank-dependency"]
    for step in steps:
        for mode in ("substring", "prefix"):
            evidence = matching_evidence(step, ["README.md"], mode=mode, empty="always")
            assert evidence == [], (mode, evidence)
