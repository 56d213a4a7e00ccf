"""The failure patterns of bot/testing/ci_cases.py, seeded into the local Buildkite and read
back over HTTP, each classified as a maintainer would (benchmarks/ci_signal_bench.py prints
the same table into docs/benchmarks/ci_signal.md)."""

from __future__ import annotations

from bot.engines.buildkite_builds import BuildkiteBuilds
from bot.jobs.ci_history import read_history
from bot.jobs.ci_signal import classify_build
from bot.testing.buildkite_server import FakeBuildkite
from bot.testing.buildkite_shapes import build, history, step_jobs, waiter
from bot.testing.ci_actions_cases import classify_cases
from bot.testing.ci_cases import ACTIONS_CASES, CASES


def test_every_case_classifies_as_expected():
    seeded = history(
        {c.step: c.main for c in CASES if c.main},
        names={c.step: c.label for c in CASES if c.label},
        keyless=[c.step for c in CASES if c.keyless_on_main],
    )
    with FakeBuildkite(token="bk-cases") as server:
        server.seed_history(seeded)
        reader = BuildkiteBuilds(
            organization="acme", pipeline="ci", token="bk-cases", api_url=server.url
        )
        past = read_history(reader.builds_for_branch("main", max_pages=1).builds, "main")
    assert len(past.builds) == 20
    jobs = [waiter()]
    for case in CASES:
        jobs += step_jobs(5000, case.step, case.head, name=case.step)
    head = build(5000, jobs, branch="feature")
    got = {}
    for case in CASES:
        at = case.merge_base_at
        merge_base = seeded[at]["commit"] if at is not None else None
        found = {
            c.name: c.classification for c in classify_build(head, past, merge_base=merge_base)
        }
        got[case.step] = found.get(case.step, "none")
    assert got == {case.step: case.expected for case in CASES}


def test_every_case_github_actions_can_show_classifies_the_same_there(github_server):
    """The same patterns as main's runs of prbot's workflow and the head's run on the local
    GitHub, read through the Actions engine (runs, then jobs with filter=all), plus the
    patterns only Actions shows (its own dispatches named main, runs a newer push cancels)."""
    cases = [c for c in CASES if c.on_actions] + list(ACTIONS_CASES)
    read = classify_cases(github_server, "acme/widgets", cases)
    assert read.runs == 20  # main's push runs; the ten dispatched ones are not history
    got = {step: (r.classification if r else "none") for step, r in read.results.items()}
    assert got == {case.step: case.expected for case in cases}
    assert len(cases) == len(CASES) - 2 + len(ACTIONS_CASES)  # soft fail and keyless: not here
