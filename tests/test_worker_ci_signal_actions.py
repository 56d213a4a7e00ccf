"""CI signal on GitHub Actions, over real HTTP (the local GitHub's Actions API) and a real
database: a failed job of prbot's run classified against the base branch's completed runs
of the workflow (their jobs read with ``filter=all``), one "re-run failed jobs" for a
failure with no trunk history (never twice), the calls it costs, a listing that stops
half-way, and prbot's own dispatches on the base branch never taken for its history."""

from __future__ import annotations

import pytest
from github import Auth, Github

from bot.engines.actions import RUN_JOBS, ActionsEngine
from bot.engines.base import BuildRef, BuildRequest
from bot.jobs.ci_history import read_history
from bot.jobs.ci_signal import classify_build
from bot.store import jobs as store
from bot.worker.ci.results import refresh_build
from bot.worker.ci.signal import HistoryCache, classify_failures

REPO = "acme/widgets"
WORKFLOW = "prbot-gpu.yml"
KEY = "prbot-" + "d" * 32
CONTEXT = {"base_branch": "main", "ci_signal": {"history_builds": 50}}


@pytest.fixture
def actions(github_server):
    github_server.add_installation(7, "acme")
    github_server.create_repo(REPO, installation_id=7, files={"a.py": "x = 1\n"})
    github_server.actions.seed_history(
        REPO,
        {
            "healthy": "P" * 20,
            "flips": "PPFPPPFPPPRPPPPPPPPP",
            "broken": "FFFPPPPPPP",
        },
    )
    # prbot's own dispatch on main, testing some PR's head: failed, and not main's history.
    other = github_server.actions.add_run(
        REPO,
        head_sha="a" * 40,
        title="prbot prbot-" + "e" * 32,
        event="workflow_dispatch",
        workflow=WORKFLOW,
    )
    github_server.actions.finish(other, "failure", jobs={"healthy": "failure"})
    RUN_JOBS._kept.clear()
    return github_server


def engine_for(server, timeout: int = 15) -> ActionsEngine:
    token = server.create_installation_token(7)
    gh = Github(
        auth=Auth.Token(token),
        base_url=server.url,
        timeout=timeout,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    return ActionsEngine(gh=gh, token=token, api_url=server.url, workflow=WORKFLOW)


def dispatched(db, server, pr: int, steps: tuple[str, ...]) -> int:
    head = f"{pr:040x}"
    for step in steps:
        spec = store.JobSpec(
            store.JobKey(REPO, pr, head, step), head, "gpu_smoke", "actions", "b200", step
        )
        assert store.claim(db, spec, attempt=1, dispatch_key=f"key-{pr}")
    ref = engine_for(server).create_build(
        BuildRequest(
            REPO, pr, head, "feature", "main", "m", steps, meta_data={"prbot_dispatch": KEY}
        )
    )
    store.record_build(
        db,
        f"key-{pr}",
        engine_name="actions",
        build_id=ref.id,
        build_number=ref.number,
        build_url=ref.web_url,
    )
    return int(ref.id.rsplit(":", 1)[1])


def news(db, server, pr: int, run_id: int, jobs: dict[str, str], cache: HistoryCache) -> int:
    """Finish the run as GitHub does, read it back as its workflow_run news does, classify;
    the calls classifying cost."""
    engine = engine_for(server)
    conclusion = "failure" if "failure" in jobs.values() else "success"
    server.actions.finish(run_id, conclusion, jobs=jobs)
    refresh_build(db, engine, store.records_for_head(db, REPO, pr, f"{pr:040x}"))
    before = len(server.calls)
    classify_failures(
        db, engine, store.records_for_head(db, REPO, pr, f"{pr:040x}"), CONTEXT, histories=cache
    )
    return len(server.calls) - before


def signals(db, pr: int) -> dict[str, dict | None]:
    return {r.key.name: r.signal for r in store.records_for_head(db, REPO, pr, f"{pr:040x}")}


def test_failed_actions_jobs_are_classified_against_mains_runs(engine, actions) -> None:
    cache = HistoryCache()
    run_id = dispatched(engine, actions, 1, ("healthy", "flips", "broken"))
    calls = news(
        engine,
        actions,
        1,
        run_id,
        {"healthy": "failure", "flips": "failure", "broken": "timed_out"},
        cache,
    )
    # The head run's jobs, one page of main's runs, the 20 runs' jobs, one re-run.
    assert calls == 1 + 1 + 20 + 1
    # The healthy job failed once, with no trunk history: its run's failed jobs re-run, and
    # every record follows its job's new attempt (GitHub re-runs all of them).
    assert actions.actions.reruns == [run_id]
    records = store.records_for_head(engine, REPO, 1, f"{1:040x}")
    assert {r.key.name: (r.state, r.signal) for r in records} == {
        "healthy": ("running", None),
        "flips": ("running", None),
        "broken": ("running", None),
    }
    # The re-run: healthy and flips pass (flaky, from the run's own attempts), broken times
    # out again (broken on main); main's runs come from the cache.
    jobs = {"healthy": "success", "flips": "success", "broken": "timed_out"}
    assert news(engine, actions, 1, run_id, jobs, cache) == 1
    found = signals(engine, 1)
    assert found["healthy"]["classification"] == "flaky"
    assert "passed on a retry of the same commit" in found["healthy"]["reason"]
    assert found["flips"]["classification"] == "flaky"
    assert found["broken"]["classification"] == "broken_trunk"
    evidence = found["broken"]["evidence"][0]
    assert "/actions/runs/" in evidence["build_url"] and "/job/" in evidence["job_url"]
    assert found["broken"]["base_job_url"] == evidence["job_url"]
    assert actions.actions.reruns == [run_id]


def test_flaky_and_broken_failures_alone_are_not_rerun(engine, actions) -> None:
    run_id = dispatched(engine, actions, 6, ("flips", "broken"))
    news(engine, actions, 6, run_id, {"flips": "failure", "broken": "failure"}, HistoryCache())
    assert actions.actions.reruns == []
    found = signals(engine, 6)
    assert (found["flips"]["classification"], found["broken"]["classification"]) == (
        "flaky",
        "broken_trunk",
    )


def test_a_rerun_that_fails_again_is_new_and_never_rerun_twice(engine, actions) -> None:
    cache = HistoryCache()
    run_id = dispatched(engine, actions, 2, ("healthy",))
    news(engine, actions, 2, run_id, {"healthy": "failure"}, cache)
    assert actions.actions.reruns == [run_id]
    news(engine, actions, 2, run_id, {"healthy": "failure"}, cache)
    signal = signals(engine, 2)["healthy"]
    assert signal["classification"] == "new" and signal["confirmed"] is True
    assert "passed in 20 of the last 20 completed run(s) on main" in signal["reason"]
    # A replay of the news asks GitHub nothing and re-runs nothing.
    before = len(actions.calls)
    records = store.records_for_head(engine, REPO, 2, f"{2:040x}")
    assert classify_failures(engine, engine_for(actions), records, CONTEXT, histories=cache) == 0
    assert len(actions.calls) == before and actions.actions.reruns == [run_id]


def test_no_failure_costs_no_call(engine, actions) -> None:
    run_id = dispatched(engine, actions, 3, ("healthy",))
    assert news(engine, actions, 3, run_id, {"healthy": "success"}, HistoryCache()) == 0
    assert signals(engine, 3) == {"healthy": None}


def test_runs_jobs_that_time_out_half_way_are_unknown_and_not_kept(engine, actions) -> None:
    cache = HistoryCache()
    run_id = dispatched(engine, actions, 4, ("healthy",))
    slow = engine_for(actions, timeout=1)
    actions.actions.finish(run_id, "failure", jobs={"healthy": "failure"})
    refresh_build(engine, slow, store.records_for_head(engine, REPO, 4, f"{4:040x}"))
    # main's 6th newest run: its jobs hang past the client's timeout.
    main_runs = sorted(r.id for r in actions.actions.runs.values() if r.event == "push")
    sixth = main_runs[::-1][5]
    actions.inject("GET", f"/repos/{REPO}/actions/runs/{sixth}/jobs", delay=3.0)
    records = store.records_for_head(engine, REPO, 4, f"{4:040x}")
    classify_failures(engine, slow, records, CONTEXT, histories=cache)
    signal = signals(engine, 4)["healthy"]
    assert signal["classification"] == "unknown"
    assert "only partly read" in signal["reason"] and f"the jobs of run {sixth}" in signal["reason"]
    assert "could not be reached" in signal["reason"]
    assert actions.actions.reruns == [] and cache._kept == {}


def test_a_failure_in_a_run_still_going_waits_for_the_run_before_its_rerun(engine, actions) -> None:
    """GitHub re-runs failed jobs of a completed run only: a failure the in_progress news
    shows is left unclassified (no re-run refused, no new called early) until the run ends."""
    cache = HistoryCache()
    run_id = dispatched(engine, actions, 5, ("healthy", "flips"))
    gh = engine_for(actions)
    with actions.lock:
        run = actions.actions.runs[run_id]
        run.status = "in_progress"
        run.job_ids.update(healthy=actions.ids(), flips=actions.ids())
        run.jobs.update(healthy="failure", flips=None)
    refresh_build(engine, gh, store.records_for_head(engine, REPO, 5, f"{5:040x}"))
    records = store.records_for_head(engine, REPO, 5, f"{5:040x}")
    assert {r.key.name: r.state for r in records}["healthy"] == "failed"
    classify_failures(engine, gh, records, CONTEXT, histories=cache)
    assert actions.actions.reruns == [] and signals(engine, 5)["healthy"] is None
    # The run completes: the failure is re-run now.
    news(engine, actions, 5, run_id, {"healthy": "failure", "flips": "success"}, cache)
    assert actions.actions.reruns == [run_id]


def test_a_runs_jobs_past_the_first_page_are_read(actions) -> None:
    """105 jobs a run: the step GitHub lists on page 2 is main's broken one, seen as such
    (one page would have found no run of it: unknown), and the head run's too."""
    wide = {f"job-{i:03d}": "P" * 6 for i in range(104)}
    wide["job-104"] = "FFFPPP"
    actions.create_repo("acme/wide", installation_id=7, files={"a.py": "x = 1\n"})
    actions.actions.seed_history("acme/wide", wide)
    run_id = actions.actions.add_run(
        "acme/wide",
        head_sha="d" * 40,
        title=f"prbot {KEY}",
        event="workflow_dispatch",
        workflow=WORKFLOW,
    )
    actions.actions.finish(
        run_id, "failure", jobs={**dict.fromkeys(wide, "success"), "job-104": "failure"}
    )
    gh = engine_for(actions)
    head = gh.head_build(BuildRef("actions", f"acme/wide:{run_id}", None, ""))
    listed = gh.branch_builds("acme/wide", "main", limit=50)
    past = read_history(listed.builds, "main")
    [result] = classify_build(head, past)
    assert (result.name, result.classification) == ("job-104", "broken_trunk")
    assert len(head["jobs"]) == 105 and listed.stopped is None


def test_a_rechecks_new_run_that_passes_at_once_is_not_classified(engine, actions) -> None:
    # The re-run made the first run's job flaky, and its record followed the re-run. A
    # /recheck dispatches the head again (a new dispatch key): its run passes first time,
    # with no failure to explain, so no classification at all.
    cache = HistoryCache()
    run_id = dispatched(engine, actions, 7, ("healthy",))
    news(engine, actions, 7, run_id, {"healthy": "failure"}, cache)
    news(engine, actions, 7, run_id, {"healthy": "success"}, cache)
    assert signals(engine, 7)["healthy"]["classification"] == "flaky"
    head = f"{7:040x}"
    spec = store.JobSpec(
        store.JobKey(REPO, 7, head, "healthy"), head, "gpu_smoke", "actions", "b200", "healthy"
    )
    assert store.claim(engine, spec, attempt=2, dispatch_key="key-7-again")
    ref = engine_for(actions).create_build(
        BuildRequest(REPO, 7, head, "feature", "main", "m", ("healthy",), meta_data={})
    )
    store.record_build(
        engine,
        "key-7-again",
        engine_name="actions",
        build_id=ref.id,
        build_number=ref.number,
        build_url=ref.web_url,
    )
    again = int(ref.id.rsplit(":", 1)[1])
    assert news(engine, actions, 7, again, {"healthy": "success"}, cache) == 0
    record = store.records_for_head(engine, REPO, 7, head)[0]
    assert record.state == "passed" and record.build_id == ref.id
    assert not (record.signal or {}).get("classification")
