"""CI signal: do real failure patterns classify right, what does a report cost in API calls,
and how long do 50 failed jobs take against 200 base builds? On Buildkite and on GitHub
Actions (benchmarks/ci_signal_actions.py: the same cases as main's runs of prbot's workflow
on the local GitHub, plus the patterns only Actions shows).

    uv run python benchmarks/ci_signal_bench.py [--rounds 5] [--out docs/benchmarks/ci_signal.md]

1. **Cases** (``bot.testing.ci_cases``): the local Buildkite test server is seeded with 20
   builds of ``main`` holding every case's step (flaky, broken and healthy ones), the history
   is read back over HTTP through ``BuildkiteEngine.branch_builds``, and each case's head
   failure is classified with its merge base. Then the bad inputs: a build without jobs, a
   job with neither key nor name, 10,000 builds of history, other branches mixed in, and a
   listing that hangs on its second page.
2. **API calls per report**, through the worker's own step (``classify_failures``) on a real
   SQLite database: a build with no failure, a build with one (cold cache, then warm), and a
   replay of the same news.
3. **Time** to classify a build of 50 failed jobs against 200 base builds of 50 steps each
   (median of ``--rounds``), against a baseline measured in the same run: ``json.loads`` of
   that same history as the API sends it, the cost no classifier can avoid.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from ci_signal_actions import run_all as run_actions

from bot.engines.base import BuildRequest
from bot.engines.buildkite import BuildkiteEngine
from bot.engines.buildkite_builds import BuildkiteBuilds
from bot.jobs.ci_history import read_history
from bot.jobs.ci_signal import SignalRules, classify_build
from bot.store import jobs as store
from bot.store.db import make_engine, migrate
from bot.testing.buildkite_server import FakeBuildkite
from bot.testing.buildkite_shapes import build, history, script_job, step_jobs, waiter
from bot.testing.ci_cases import CASES
from bot.worker.ci.results import refresh_build
from bot.worker.ci.signal import HistoryCache, classify_failures

TOKEN = "bk-bench-token"
HEAD = "f" * 40


def engine_for(server: FakeBuildkite) -> BuildkiteEngine:
    return BuildkiteEngine(organization="acme", pipeline="ci", token=TOKEN, api_url=server.url)


def reader_for(server: FakeBuildkite, timeout: float = 10.0) -> BuildkiteBuilds:
    return BuildkiteBuilds(
        organization="acme",
        pipeline="ci",
        token=TOKEN,
        api_url=server.url,
        client=httpx.Client(timeout=timeout),
    )


def run_cases() -> list[dict]:
    patterns = {c.step: c.main for c in CASES if c.main}
    names = {c.step: c.label for c in CASES if c.label}
    keyless = [c.step for c in CASES if c.keyless_on_main]
    rows = []
    with FakeBuildkite(token=TOKEN) as server:
        seeded = history(patterns, names=names, keyless=keyless)
        server.seed_history(seeded)
        listed = reader_for(server).builds_for_branch("main", max_pages=1)
        past = read_history(listed.builds, "main", exclude_commit=HEAD)
        jobs = [waiter()]
        for case in CASES:
            jobs += step_jobs(5000, case.step, case.head, name=case.step)
        head = build(5000, jobs, branch="feature", commit=HEAD)
        for case in CASES:
            merge_base = (
                seeded[case.merge_base_at]["commit"] if case.merge_base_at is not None else None
            )
            found = {c.name: c for c in classify_build(head, past, merge_base=merge_base)}
            got = found[case.step].classification if case.step in found else "none"
            reason = found[case.step].reason if case.step in found else "not a failure"
            rows.append(
                {
                    "case": case.step,
                    "pattern": case.pattern,
                    "expected": case.expected,
                    "got": got,
                    "reason": reason,
                }
            )
        rows += bad_inputs(server)
    return rows


def bad_inputs(server: FakeBuildkite) -> list[dict]:
    rows = []
    healthy = history({"kernels": "P" * 20}, newest=20_000)

    def one(case: str, pattern: str, head: dict, past, expected: str) -> None:
        results = classify_build(head, past)
        got = ",".join(sorted({r.classification for r in results})) or "none"
        rows.append(
            {
                "case": case,
                "pattern": pattern,
                "expected": expected,
                "got": got,
                "reason": "; ".join(r.reason for r in results),
            }
        )

    past = read_history(healthy, "main")
    one(
        "build-without-jobs",
        "a build listed with exclude_jobs (no jobs array)",
        build(5000, None, branch="feature"),
        past,
        "unknown",
    )
    nameless = build(5000, [script_job(5000, None, "failed", name="")], branch="feature")
    one(
        "job-without-key-or-name",
        "a script job with neither step_key nor name",
        nameless,
        past,
        "unknown",
    )
    many = history({"kernels": "P" * 10_000}, newest=30_000)
    server.seed_history(many)
    reader = reader_for(server)
    listed = reader.builds_for_branch("main", max_pages=1)
    one(
        "ten-thousand-builds",
        f"10,000 builds of main listed; {reader.calls} call read the newest 100, 50 kept",
        build(5000, step_jobs(5000, "kernels", "X"), branch="feature"),
        read_history(listed.builds, "main"),
        "new",
    )
    mixed = history({"kernels": "FFFFFFFFFF"}, newest=40_000, branch="release-0.9") + healthy
    one(
        "other-branches-mixed-in",
        "a failing release branch listed with main",
        build(5000, step_jobs(5000, "kernels", "X"), branch="feature"),
        read_history(mixed, "main"),
        "new",
    )
    server.stall_from_page, server.stall_seconds = 2, 1.5
    try:
        listed = reader_for(server, timeout=0.3).builds_for_branch(
            "main", max_pages=2, partial=True
        )
    finally:
        server.stall_from_page = None
    stalled = read_history(
        listed.builds, "main", limit=200, complete=listed.stopped is None, stopped=listed.stopped
    )
    one(
        "api-times-out-half-way",
        f"page 2 of the listing hangs ({listed.stopped})",
        build(5000, step_jobs(5000, "kernels", "X"), branch="feature"),
        stalled,
        "unknown",
    )
    return rows


def calls_per_report() -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, FakeBuildkite(token=TOKEN) as server:
        db = make_engine(f"sqlite:///{tmp}/bench.sqlite")
        migrate(db)
        server.seed_history(history({"s1": "P" * 60, "s2": "P" * 60}, newest=900))
        bk = engine_for(server)
        cache = HistoryCache()
        context = {"base_branch": "main", "merge_base": f"{900:040x}"}

        def news(pr: int, number: int, outcome: dict[str, str]) -> int:
            for step, job_state in outcome.items():
                server.finish_job(number, step, job_state, deliver=False)
            head = f"{pr:040x}"
            refresh_build(db, bk, store.records_for_head(db, "acme/widgets", pr, head))
            before = len(server.calls)
            records = store.records_for_head(db, "acme/widgets", pr, head)
            classify_failures(db, bk, records, context, histories=cache)
            return len(server.calls) - before

        def build_for(pr: int, steps: tuple[str, ...]) -> int:
            head = f"{pr:040x}"
            for step in steps:
                spec = store.JobSpec(
                    store.JobKey("acme/widgets", pr, head, step),
                    head,
                    "gpu_smoke",
                    "buildkite",
                    "b200",
                    step,
                )
                store.claim(db, spec, attempt=1, dispatch_key=f"k{pr}")
            ref = bk.create_build(BuildRequest("acme/widgets", pr, head, "f", "main", "m", steps))
            store.record_build(
                db,
                f"k{pr}",
                engine_name="buildkite",
                build_id=ref.id,
                build_number=ref.number,
                build_url=ref.web_url,
            )
            return ref.number

        number = build_for(1, ("s1", "s2"))
        rows.append(
            {
                "report": "no failure (2 smoke jobs passed)",
                "calls": news(1, number, {"s1": "passed", "s2": "passed"}),
            }
        )
        number = build_for(2, ("s1", "s2"))
        rows.append(
            {
                "report": "one failure, cold cache: head build, main's listing (1 page), the retry",
                "calls": news(2, number, {"s1": "failed", "s2": "passed"}),
            }
        )
        rows.append(
            {
                "report": "its retry fails too (new, confirmed): head build",
                "calls": news(2, number, {"s1": "failed"}),
            }
        )
        before = len(server.calls)
        classify_failures(
            db,
            bk,
            store.records_for_head(db, "acme/widgets", 2, f"{2:040x}"),
            context,
            histories=cache,
        )
        rows.append(
            {"report": "the same news delivered again", "calls": len(server.calls) - before}
        )
        number = build_for(3, ("s1", "s2"))
        rows.append(
            {
                "report": "another PR's failure, warm cache: head build, the retry",
                "calls": news(3, number, {"s1": "passed", "s2": "failed"}),
            }
        )
    return rows


def timing(rounds: int) -> dict:
    steps = [f"step-{i:02d}" for i in range(50)]
    letters = "PPPPFPPPPPPPPRPPPPPPPPPPPPPPPP"
    patterns = {s: (letters * 7)[i : i + 200] for i, s in enumerate(steps)}
    listing = json.dumps(history(patterns, newest=10_000))
    head_jobs = [waiter()]
    for step in steps:
        head_jobs += step_jobs(20_000, step, "X")
    head = build(20_000, head_jobs, branch="feature")
    rules = SignalRules(history_builds=200)
    parse, classify = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        builds = json.loads(listing)
        parse.append(time.perf_counter() - started)
        started = time.perf_counter()
        results = classify_build(head, read_history(builds, "main", limit=200), rules)
        classify.append(time.perf_counter() - started)
        assert len(results) == 50
    p, c = statistics.median(parse), statistics.median(classify)
    return {
        "parse_ms": p * 1000,
        "classify_ms": c * 1000,
        "ratio": c / p,
        "bytes": len(listing),
        "rounds": rounds,
    }


def case_rows(cases: list[dict]) -> list[str]:
    lines = [
        "| Case | Pattern | Expected | Got | Reason prbot gives |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in cases:
        mark = "" if r["expected"] == r["got"] else " ❌"
        reason = r["reason"].replace("|", "\\|")
        lines.append(
            f"| `{r['case']}` | {r['pattern']} | {r['expected']} | {r['got']}{mark} | {reason} |"
        )
    return lines


def write(
    out: Path,
    cases: list[dict],
    calls: list[dict],
    times: dict,
    actions: tuple[list[dict], list[dict], dict],
) -> None:
    right = sum(1 for r in cases if r["expected"] == r["got"])
    a_cases, a_calls, a_times = actions
    a_right = sum(1 for r in a_cases if r["expected"] == r["got"])
    lines = [
        "# CI signal: cases, API calls, time",
        "",
        "`uv run python benchmarks/ci_signal_bench.py` (this file is its output).",
        "",
        f"Cases classified right: {right} of {len(cases)} on Buildkite, {a_right} of "
        f"{len(a_cases)} on GitHub Actions.",
        "",
        f"## Cases on Buildkite: {right} of {len(cases)} classified right",
        "",
        "Real failure patterns, one step each, against 20 builds of `main` seeded into the "
        "local Buildkite test server (`bot/testing/ci_cases.py`, letters newest first: P "
        "passed, F failed, R failed then passed on a retry, X failed twice, T timed out, S "
        "soft failed, C canceled, - not run), read back over HTTP; then the bad inputs.",
        "",
        "The cases are written by hand from the failure patterns PyTorch's Dr. CI sorts and "
        "vLLM's CI shows (named in each row), not recorded from a real pipeline: the letters "
        "are what such a failure looks like in Buildkite's REST shape. Each is classified "
        "with its own merge base (the build marked in `ci_cases.py`; none: the latest builds "
        "stand in). The default thresholds (`checks.jobs.ci_signal`) are used throughout.",
        "",
        *case_rows(cases),
        "",
        f"## Cases on GitHub Actions: {a_right} of {len(a_cases)} classified right",
        "",
        "The same patterns as completed `push` runs of prbot's workflow on `main` in the local "
        "GitHub (`bot/testing/ci_actions_cases.py`), read through the Actions engine: runs "
        "(`GET …/actions/workflows/prbot-gpu.yml/runs?branch=main&status=completed`), then "
        "each run's jobs with every attempt (`…/runs/{id}/jobs?filter=all`; an R is a failed "
        'job passing on a "re-run failed jobs" attempt). The head is prbot\'s run of the '
        "workflow (dispatched with ref `main`): one run with the failures seen once, one with "
        "them re-run. Left out: the soft-failed and keyless-label cases (Actions has neither). "
        "Added: three patterns only Actions shows (the last rows).",
        "",
        *case_rows(a_cases),
        "",
    ]
    lines += [
        "",
        "## API calls per report",
        "",
        "Through the worker's step (`bot/worker/ci/signal.py`: `classify_failures`) on SQLite, "
        "counted at the test server. `history_builds` is 50: one page (Buildkite pages of "
        "100; the newest 50 kept).",
        "",
        "| Report | Buildkite calls |",
        "| --- | ---: |",
    ]
    lines += [f"| {r['report']} | {r['calls']} |" for r in calls]
    lines += [
        "",
        "GitHub Actions, the same step on the local GitHub (60 runs of `main`, `history_builds` "
        "50). A run's jobs are one call per run, so a cold read costs a call per run of the "
        "history; the jobs of a completed attempt never change and are kept per process "
        "(at most 4,000 runs), so a read after the 5-minute history expires lists the runs "
        "and asks only for the jobs of runs it has not seen.",
        "",
        "| Report | GitHub calls |",
        "| --- | ---: |",
    ]
    lines += [f"| {r['report']} | {r['calls']} |" for r in a_calls]
    lines += [
        "",
        "## Time: 50 failed jobs against 200 base builds",
        "",
        f"200 builds of 50 steps each ({times['bytes'] / 1e6:.1f} MB of JSON as the API lists "
        f"them), a head build whose 50 steps all failed twice; median of {times['rounds']} rounds.",
        "",
        "| What | Median (ms) |",
        "| --- | ---: |",
        f"| Baseline: `json.loads` of the history | {times['parse_ms']:.1f} |",
        f"| Read the history and classify 50 failures | {times['classify_ms']:.1f} |",
        f"| Ratio | {times['ratio']:.2f}x |",
        "",
        f"GitHub Actions: 200 runs of `main` with 50 jobs each and a head run whose 50 jobs "
        f"failed on both attempts, as the local GitHub answers them ({a_times['calls']} "
        f"answers, {a_times['bytes'] / 1e6:.1f} MB of JSON); median of {a_times['rounds']} "
        "rounds.",
        "",
        "| What | Median (ms) |",
        "| --- | ---: |",
        f"| Baseline: `json.loads` of the answers | {a_times['parse_ms']:.1f} |",
        f"| Read the runs as builds, the history, and classify 50 failures "
        f"| {a_times['classify_ms']:.1f} |",
        f"| Ratio | {a_times['ratio']:.2f}x |",
        "",
        f"Load average at the end of the run: {os.getloadavg()[0]:.1f} (2 cores, shared).",
        "",
    ]
    out.write_text("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks/ci_signal.md"))
    args = parser.parse_args()
    cases = run_cases()
    calls = calls_per_report()
    times = timing(args.rounds)
    actions = run_actions(args.rounds)
    write(args.out, cases, calls, times, actions)
    print(args.out.read_text())
    return 0 if all(r["expected"] == r["got"] for r in cases + actions[0]) else 1


if __name__ == "__main__":
    sys.exit(main())
