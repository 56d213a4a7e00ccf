"""bot.jobs.actions_runs: a workflow run and its jobs of every attempt read as a Buildkite
build, so the classifier's history reader sees the same steps and retry chains."""

from __future__ import annotations

from bot.jobs.actions_runs import build_of_run
from bot.jobs.ci_history import step_runs

RUN = {
    "id": 9,
    "run_number": 41,
    "head_sha": "a" * 40,
    "head_branch": "main",
    "status": "completed",
    "conclusion": "failure",
    "html_url": "https://github.com/o/r/actions/runs/9",
}


def job(job_id, name, conclusion, attempt=1, status="completed"):
    return {
        "id": job_id,
        "name": name,
        "run_attempt": attempt,
        "status": status,
        "conclusion": conclusion,
        "html_url": f"https://github.com/o/r/actions/runs/9/job/{job_id}",
    }


def test_attempts_of_one_name_chain_oldest_first_whatever_the_listing_order():
    jobs = [
        job(30, "smoke", "success", 2),
        job(10, "smoke", "failure", 1),
        job(11, "lint", "success"),
    ]
    built = build_of_run(RUN, jobs)
    assert (built["number"], built["branch"], built["commit"]) == (41, "main", "a" * 40)
    runs, problems = step_runs(built)
    assert problems == [] and set(runs) == {"smoke", "lint"}
    smoke = runs["smoke"]
    assert [a.state for a in smoke.attempts] == ["failed", "passed"]
    assert smoke.failed_then_passed and smoke.job_url.endswith("/job/30")


def test_states_map_to_buildkites_words_and_unknown_ones_are_no_failure():
    jobs = [
        job(1, "a", "timed_out"),
        job(2, "b", "cancelled"),
        job(3, "c", None, status="in_progress"),
        job(4, "d", None, status="queued"),
        job(5, "e", "something_new"),
        job(6, "f", None),  # completed without a conclusion
    ]
    runs, _ = step_runs(build_of_run(RUN, jobs))
    states = {k: r.final.state for k, r in runs.items()}
    assert states == {
        "a": "timed_out",
        "b": "canceled",
        "c": "running",
        "d": "scheduled",
        "e": "something_new",
        "f": "unknown",
    }
    assert [k for k, r in runs.items() if r.failed] == ["a"]


def test_junk_entries_and_repeated_ids_are_dropped():
    jobs = [job(1, "a", "failure"), job(1, "a", "failure"), "x", {"id": True, "name": "b"}, {}]
    jobs.append({"id": 7, "name": "", "status": "completed", "conclusion": "failure"})
    built = build_of_run(RUN, jobs, commit="")
    assert [j["id"] for j in built["jobs"]] == ["1"] and built["commit"] == ""
