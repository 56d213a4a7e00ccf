"""The GitHub Actions half of benchmarks/ci_signal_bench.py: the cases on the local GitHub's
Actions API, the calls a report costs through the worker's step, and the time to classify
50 failed jobs against 200 of main's runs."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bot.engines.actions import RUN_JOBS
from bot.jobs.actions_runs import build_of_run
from bot.jobs.ci_history import read_history
from bot.jobs.ci_signal import SignalRules, classify_build
from bot.store import jobs as store
from bot.store.db import make_engine, migrate
from bot.testing import FakeGitHub
from bot.testing.ci_actions_cases import INSTALLATION, WORKFLOW, actions_engine, classify_cases
from bot.testing.ci_cases import ACTIONS_CASES, CASES
from bot.worker.ci.results import refresh_build
from bot.worker.ci.signal import HISTORY_TTL, HistoryCache, classify_failures

REPO = "acme/widgets"


def actions_cases(tmp: Path) -> list[dict]:
    cases = [c for c in CASES if c.on_actions] + list(ACTIONS_CASES)
    server = FakeGitHub(root=tmp / "cases").start()
    try:
        read = classify_cases(server, REPO, cases)
    finally:
        server.stop()
    rows = []
    for case in cases:
        result = read.results[case.step]
        rows.append(
            {
                "case": case.step,
                "pattern": case.pattern,
                "expected": case.expected,
                "got": result.classification if result else "none",
                "reason": result.reason if result else "not a failure",
            }
        )
    return rows


def actions_calls(tmp: Path) -> list[dict]:
    """GitHub calls per report through ``classify_failures``, counted at the test server."""
    server = FakeGitHub(root=tmp / "calls").start()
    rows = []
    try:
        server.add_installation(INSTALLATION, "acme")
        server.create_repo(REPO, installation_id=INSTALLATION, files={"a.py": "x = 1\n"})
        server.actions.seed_history(REPO, {"s1": "P" * 60, "s2": "P" * 60}, workflow=WORKFLOW)
        RUN_JOBS._kept.clear()
        db = make_engine(f"sqlite:///{tmp}/calls.sqlite")
        migrate(db)
        engine = actions_engine(server, REPO)
        now = [0.0]
        cache = HistoryCache(clock=lambda: now[0])
        context = {"base_branch": "main", "ci_signal": {"history_builds": 50}}

        def run_for(pr: int) -> int:
            head = f"{pr:040x}"
            for step in ("s1", "s2"):
                key = store.JobKey(REPO, pr, head, step)
                spec = store.JobSpec(key, head, "gpu_smoke", "actions", "b200", step)
                store.claim(db, spec, attempt=1, dispatch_key=f"k{pr}")
            run_id = server.actions.add_run(
                REPO,
                head_sha="d" * 40,
                title=f"prbot prbot-{pr:032x}",
                event="workflow_dispatch",
                workflow=WORKFLOW,
            )
            url = f"{server.url}/{REPO}/actions/runs/{run_id}"
            store.record_build(
                db,
                f"k{pr}",
                engine_name="actions",
                build_id=f"{REPO}:{run_id}",
                build_number=None,
                build_url=url,
            )
            return run_id

        def news(pr: int, run_id: int, jobs: dict[str, str]) -> int:
            conclusion = "failure" if "failure" in jobs.values() else "success"
            server.actions.finish(run_id, conclusion, jobs=jobs)
            records = store.records_for_head(db, REPO, pr, f"{pr:040x}")
            refresh_build(db, engine, records)
            before = len(server.calls)
            records = store.records_for_head(db, REPO, pr, f"{pr:040x}")
            classify_failures(db, engine, records, context, histories=cache)
            return len(server.calls) - before

        run = run_for(1)
        rows.append(
            {
                "report": "no failure (2 smoke jobs passed)",
                "calls": news(1, run, {"s1": "success", "s2": "success"}),
            }
        )
        run = run_for(2)
        rows.append(
            {
                "report": "one failure, cold cache: the head run's jobs, main's runs (1 page), "
                "the 50 runs' jobs, the re-run",
                "calls": news(2, run, {"s1": "failure", "s2": "success"}),
            }
        )
        rows.append(
            {
                "report": "its re-run fails too (new, confirmed): the head run's jobs",
                "calls": news(2, run, {"s1": "failure"}),
            }
        )
        before = len(server.calls)
        records = store.records_for_head(db, REPO, 2, f"{2:040x}")
        classify_failures(db, engine, records, context, histories=cache)
        rows.append(
            {"report": "the same news delivered again", "calls": len(server.calls) - before}
        )
        run = run_for(3)
        rows.append(
            {
                "report": "another PR's failure, warm cache: the head run's jobs, the re-run",
                "calls": news(3, run, {"s1": "success", "s2": "failure"}),
            }
        )
        now[0] += HISTORY_TTL + 1
        run = run_for(4)
        rows.append(
            {
                "report": "another PR's failure after the 5-minute history expired: the head "
                "run's jobs, main's runs (1 page; each run's jobs kept), the re-run",
                "calls": news(4, run, {"s1": "failure", "s2": "success"}),
            }
        )
    finally:
        server.stop()
    return rows


def actions_timing(tmp: Path, rounds: int) -> dict:
    """50 failed jobs (each failed on its re-run too) against 200 of main's runs of 50 jobs,
    from the JSON the local GitHub answers; baseline: ``json.loads`` of those answers."""
    steps = [f"step-{i:02d}" for i in range(50)]
    letters = "PPPPFPPPPPPPPRPPPPPPPPPPPPPPPP"
    patterns = {s: (letters * 7)[i : i + 200] for i, s in enumerate(steps)}
    server = FakeGitHub(root=tmp / "timing").start()
    try:
        server.add_installation(INSTALLATION, "acme")
        server.create_repo(REPO, installation_id=INSTALLATION, files={"a.py": "x = 1\n"})
        server.actions.seed_history(REPO, patterns, workflow=WORKFLOW)
        head_id = server.actions.add_run(
            REPO, head_sha="d" * 40, title="prbot x", event="workflow_dispatch", workflow=WORKFLOW
        )
        server.actions.finish(head_id, "failure", jobs=dict.fromkeys(steps, "failure"))
        server.actions.rerun_failed(head_id)
        server.actions.finish(head_id, "failure", jobs=dict.fromkeys(steps, "failure"))
        token = server.create_installation_token(INSTALLATION)
        client = httpx.Client(
            base_url=server.url, headers={"Authorization": f"token {token}"}, timeout=60
        )
        base = f"/repos/{REPO}/actions"
        pages = [
            client.get(
                f"{base}/workflows/{WORKFLOW}/runs",
                params={"branch": "main", "status": "completed", "per_page": 100, "page": p},
            ).text
            for p in (1, 2)
        ]
        run_ids = [r["id"] for page in pages for r in json.loads(page)["workflow_runs"]]
        jobs = [
            client.get(f"{base}/runs/{i}/jobs", params={"filter": "all", "per_page": 100}).text
            for i in [head_id, *run_ids]
        ]
    finally:
        server.stop()
    texts = pages + jobs
    size = sum(len(t) for t in texts)
    rules = SignalRules(history_builds=200)
    parse, classify = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        parsed = [json.loads(t) for t in texts]
        parse.append(time.perf_counter() - started)
        runs = [r for page in parsed[:2] for r in page["workflow_runs"]]
        head_jobs, run_jobs = parsed[2]["jobs"], [p["jobs"] for p in parsed[3:]]
        started = time.perf_counter()
        head = build_of_run({"id": head_id, "status": "completed"}, head_jobs, commit="")
        builds = [build_of_run(run, js) for run, js in zip(runs, run_jobs, strict=True)]
        results = classify_build(head, read_history(builds, "main", limit=200), rules)
        classify.append(time.perf_counter() - started)
        assert len(results) == 50
    p, c = statistics.median(parse), statistics.median(classify)
    return {
        "parse_ms": p * 1000,
        "classify_ms": c * 1000,
        "ratio": c / p,
        "bytes": size,
        "rounds": rounds,
        "calls": len(texts),
    }


def run_all(rounds: int) -> tuple[list[dict], list[dict], dict]:
    with tempfile.TemporaryDirectory() as tmp:
        return (
            actions_cases(Path(tmp)),
            actions_calls(Path(tmp)),
            actions_timing(Path(tmp), rounds),
        )
