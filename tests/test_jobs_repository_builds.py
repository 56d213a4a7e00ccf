"""The repository's own builds of a head as a source of their own (bot/jobs/repository_builds.py):
which selected steps they ran or scheduled, prbot's builds left out, and the section they draw."""

from __future__ import annotations

from bot.core.sections import Section, Status
from bot.jobs.repository_builds import annotate, build_ids, from_json, steps_in_builds


def build(number: int, jobs: dict[str, str], **extra) -> dict:
    return {
        "number": number,
        "web_url": f"https://buildkite.com/vllm/ci/builds/{number}",
        "jobs": [
            {"type": "script", "step_key": key, "state": state, "web_url": f"https://b/{number}"}
            for key, state in jobs.items()
        ]
        + [{"type": "waiter", "step_key": None, "state": "passed"}],
        **extra,
    }


def test_the_newest_build_that_ran_a_step_speaks_for_it():
    builds = [  # newest first, as Buildkite lists them
        build(3, {"a": "skipped"}),
        build(2, {"a": "running", "b": "blocked"}),
        build(1, {"a": "passed", "b": "failed"}),
    ]
    seen = steps_in_builds(builds, ["a", "b", "c"], own_builds=())
    assert (seen["a"].build, seen["a"].state, seen["a"].ran) == (2, "running", True)
    assert (seen["b"].build, seen["b"].state, seen["b"].ran) == (1, "failed", True)
    assert "c" not in seen


def test_a_step_no_build_will_run_is_seen_but_not_counted():
    seen = steps_in_builds([build(5, {"a": "blocked"})], ["a"], own_builds=())
    assert seen["a"].state == "blocked" and not seen["a"].ran


def test_prbots_own_builds_and_retried_jobs_are_not_the_repositorys():
    mine = build(9, {"a": "passed"}, id="b-9")
    retried = build(8, {"a": "failed"}, id="b-8")
    retried["jobs"][0]["retried"] = True
    assert steps_in_builds([mine, retried], ["a"], own_builds={"b-9"}) == {}
    # prbot's meta-data on a build prbot's store never recorded is a PR's doing: the build is
    # the repository's (its failure is not hidden).
    claims = build(7, {"a": "failed"}, id="b-7", meta_data={"prbot_dispatch": "prbot-1"})
    seen = steps_in_builds([claims], ["a"], own_builds={"b-9"})
    assert (seen["a"].build, seen["a"].state) == (7, "failed")
    assert build_ids([mine, claims, {"id": 3}, None]) == ["b-9", "b-7"]  # type: ignore[list-item]


def test_malformed_builds_are_skipped():
    odd = [None, {"number": "x", "jobs": "no"}, {"jobs": [None, {"type": "script"}]}]
    assert steps_in_builds(odd, ["a"], own_builds=()) == {}  # type: ignore[arg-type]


def test_kept_steps_come_back_from_json():
    seen = steps_in_builds([build(2, {"a": "passed"})], ["a"], own_builds=())
    kept = {k: v.to_json() for k, v in seen.items()}
    assert from_json(kept) == seen
    assert from_json({"a": "junk", "b": {"state": 3}}) == {}


SECTION = Section(
    "jobs",
    Status.WARN,
    "2 smoke tests on b200, awaiting a maintainer's approval of this head",
    [
        {"name": "V1", "kind": "gpu_smoke", "hardware": "b200", "step_key": "a",
         "status": "awaiting_approval"},
        {"name": "Bench", "kind": "gpu_smoke", "hardware": "b200", "step_key": "b",
         "status": "awaiting_approval"},
    ],
)  # fmt: skip


def test_advisory_says_what_the_repositorys_builds_say_and_waits_for_nothing():
    seen = steps_in_builds([build(7, {"a": "failed"})], ["a", "b"], own_builds=())
    shown = annotate(SECTION, seen, ["one note"], dispatching=False)
    assert [f["status"] for f in shown.findings] == ["selected", "selected"]
    assert shown.findings[0]["repository_build"]["build"] == 7
    assert "repository_build" not in shown.findings[1]
    assert shown.summary == (
        "2 GPU jobs on b200; the repository's own builds of this head: 1 failed; "
        "1 smoke step in no build yet; advisory: prbot dispatches nothing here"
    )
    assert shown.status == Status.WARN and shown.data["repository_notes"] == ["one note"]


def test_dispatching_keeps_prbots_own_words_and_status():
    seen = steps_in_builds([build(7, {"a": "passed"})], ["a"], own_builds=())
    shown = annotate(SECTION, seen, [], dispatching=True)
    assert shown.summary == SECTION.summary and shown.status == SECTION.status
    assert [f["status"] for f in shown.findings] == ["awaiting_approval", "awaiting_approval"]
    assert shown.findings[0]["repository_build"]["state"] == "passed"


def test_an_unsafe_url_is_not_a_link():
    seen = steps_in_builds([build(7, {"a": "passed"})], ["a"], own_builds=())
    bad = {"a": type(seen["a"])("a", "passed", 7, "javascript:alert(1)", True)}
    shown = annotate(SECTION, bad, [], dispatching=True)
    assert shown.findings[0]["repository_build"]["url"] is None
