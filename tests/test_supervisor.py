"""`prbot serve`'s worker processes: they do the work, a dead one is replaced, all stop
with serve; the memory limit turns a huge allocation into an error section, not a crash."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from intake_helpers import ROOT, ServeProcess, signed_headers

from bot.store import db, state

REPO = "acme/widgets"
STARTED = re.compile(r"worker (\d+) started \(pid (\d+)\)")


def _wait(predicate, what: str, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _worker_pids(serve: ServeProcess) -> list[int]:
    return [int(pid) for _slot, pid in STARTED.findall(serve.output())]


def _alive(pid: int) -> bool:
    try:
        state_line = Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
    except FileNotFoundError:
        return False
    return state_line != "Z"


def test_worker_processes_do_the_work_restart_and_stop_with_serve(tmp_path, github_server):
    github_server.add_installation(7, "acme")
    github_server.create_repo(REPO, installation_id=7, files={"a.py": "x = 1\n"})
    github_server.commit(REPO, "feature", {"a.py": "x = 2\n"})
    number = github_server.open_pull_request(REPO, head_branch="feature", title="T")["number"]
    key = tmp_path / "app.pem"
    key.write_text(github_server.private_key_pem)
    serve = ServeProcess(
        tmp_path / "serve",
        "--dry-run",
        PRBOT_APP_ID=str(github_server.app_id),
        PRBOT_PRIVATE_KEY_PATH=str(key),
        PRBOT_GITHUB_API_URL=github_server.url,
        PRBOT_GITHUB_REQUEST_INTERVAL="0",
        PRBOT_GITHUB_WRITE_INTERVAL="0",
        PRBOT_WORKER_MEMORY_MB="2048",
    )
    with serve:
        [first] = _wait(lambda: _worker_pids(serve), "a worker process")
        assert first != serve.process.pid and _alive(first)
        # A worker that dies (OOM killer, segfault) is replaced.
        os.kill(first, signal.SIGKILL)
        pids = _wait(lambda: (p := _worker_pids(serve)) and len(p) == 2 and p, "a restart")
        second = pids[1]
        assert second != first and _alive(second) and not _alive(first)
        assert "exited with signal SIGKILL; restarting" in serve.output()
        # The new worker process does the pipeline against SQLite next to the intake.
        body = json.dumps(github_server.pull_request_event(REPO, number, "opened")).encode()
        response = httpx.post(
            f"{serve.url}/webhooks/github",
            content=body,
            headers=signed_headers(body, "pull_request"),
            timeout=20,
        )
        assert response.status_code == 202
        engine = db.make_engine(serve.env["PRBOT_DATABASE_URL"])
        report = _wait(lambda: state.latest_report(engine, REPO, number), "a stored report")
        engine.dispose()
        assert report["markdown"].startswith("<!-- prbot")
        # Job metrics come from the worker process's files. The report is stored inside the
        # job, and the worker counts the job only after it marks it done
        # (bot/worker/loop.py): so wait for the count, not for the report.
        done = 'prbot_job_latency_seconds_count{kind="pipeline",outcome="done"}'

        def counted() -> str | None:
            text = httpx.get(f"{serve.url}/metrics", timeout=20).text
            return text if done in text else None

        metrics = _wait(counted, "the pipeline job counted as done")
        assert 'prbot_deliveries_total{event="pull_request",outcome="accepted"} 1.0' in metrics
        limit = next(
            line
            for line in Path(f"/proc/{second}/limits").read_text().splitlines()
            if line.startswith("Max address space")
        )
        assert limit.split()[3] == str(2048 * 1024 * 1024)
    assert serve.process.returncode == 0
    assert not _alive(second), "serve stopped its worker"


def test_memory_error_under_the_worker_limit_is_the_checks_error_section(tmp_path):
    # A fresh interpreter, limited like a worker process, runs a check that allocates 8 GiB.
    script = """
import sys
from bot.runtime.supervisor import apply_memory_limit
from bot.checks.base import Check, CheckContext
from bot.report.runner import run_check
from types import SimpleNamespace

apply_memory_limit(1024)

def greedy(snapshot, rules, context):
    return bytearray(8 * 1024**3)

check = Check(name="greedy", title="Greedy", run=greedy)
rules = SimpleNamespace(checks=SimpleNamespace(greedy=SimpleNamespace(enabled=True)))
section = run_check(check, SimpleNamespace(repo="o/r", head_sha="0" * 40), rules, None)
print(section.status.value, section.summary)
survivor = bytearray(64 * 1024**2)  # the process goes on working afterwards
print("alive", len(survivor))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "error check ran out of memory on this PR; not verified"
    assert lines[1] == f"alive {64 * 1024**2}"
