"""Two `prbot worker` processes against one, on one PostgreSQL, on a CPU-bound pipeline.

    uv run python benchmarks/worker_scaling.py --postgres postgresql://postgres@127.0.0.1:5432/test

A local GitHub test server holds a repository shaped like vLLM's attention code (a registry,
backends, requirement files), with ``--prs`` open PRs, each touching several Python files so
the checks parse and compare real code. For each worker count (1, then 2, alternating for
``--repeat`` rounds) every PR gets a fresh push and its signed ``pull_request.synchronize``
delivery; the intake stores them with no worker running, then that many ``prbot worker``
processes start and the clock runs until the queue is drained (every delivery and pipeline
job done). Figures: jobs per second, and 2-worker / 1-worker, to docs/benchmarks/
worker_scaling.md. Each round uses a scratch schema, dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.demo import INSTALLATION_ID, LocalStack, wait_for  # noqa: E402
from bot.store.queue import Queue  # noqa: E402

REPO = "acme/widgets"


def backend_source(index: int, variant: int) -> str:
    """A backend module of a realistic size: a class, a few methods, some arithmetic."""
    lines = [
        "import torch",
        "",
        f"class Backend{index}:",
        f'    """Attention backend {index}, revision {variant}."""',
        "",
        "    @classmethod",
        "    def supports_compute_capability(cls, capability):",
        f"        return capability.major >= {8 + index % 3}",
        "",
    ]
    for method in range(40):
        lines += [
            f"    def step_{method}(self, q, k, v, scale={variant + method}):",
            f"        out = (q @ k.transpose(-1, -2)) * scale + {method}",
            "        return out.softmax(-1) @ v",
            "",
        ]
    return "\n".join(lines) + "\n"


def scratch_schema(url: str) -> tuple[str, callable]:
    from sqlalchemy.engine import make_url

    from bot.store.db import make_engine

    schema = f"prbot_scale_{uuid.uuid4().hex[:10]}"
    admin = make_engine(url)
    with admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})

    def drop() -> None:
        with admin.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.dispose()

    return scoped.render_as_string(hide_password=False), drop


def one_round(root: Path, url: str, workers: int, prs: int, round_index: int) -> dict:
    files = {f"vllm/attention/backends/b{i}.py": backend_source(i, 0) for i in range(12)}
    files["requirements/common.txt"] = "numpy>=1.26\nregex\n"
    files["README.md"] = "# widgets\n"
    with LocalStack(root, with_worker=False, database_url=url, dry_run=True) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files=files)
        numbers = []
        for n in range(prs):
            branch = f"feature{n}"
            gh.commit(
                REPO,
                branch,
                {f"vllm/attention/backends/b{n % 12}.py": backend_source(n % 12, 1)},
                "start",
            )
            numbers.append(
                gh.open_pull_request(
                    REPO, head_branch=branch, title=f"Tune backend {n}", author="alice"
                )["number"]
            )
        for n, number in enumerate(numbers):
            touched = {
                f"vllm/attention/backends/b{(n + k) % 12}.py": backend_source(
                    (n + k) % 12, round_index + 2
                )
                for k in range(4)
            }
            gh.push(REPO, number, touched, "tune")
            assert (
                stack.deliver(
                    "pull_request", gh.pull_request_event(REPO, number, "synchronize")
                ).status_code
                == 202
            )
        queue = Queue(stack.service.engine)
        env = stack.worker_environment()
        env["PRBOT_DRY_RUN"] = "1"
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "bot", "worker", "--dry-run", "--threads", "2"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=str(ROOT),
            )
            for _ in range(workers)
        ]
        try:
            # The clock starts at the first lease: process start-up (imports) is not the work.
            wait_for(lambda: queue.depth()["leased"] > 0, timeout=120, interval=0.01, what="lease")
            started = time.monotonic()
            wait_for(stack.idle, timeout=1800, interval=0.1, what="drained queue")
            seconds = time.monotonic() - started
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=30)
        done = [j for j in queue.jobs("done", limit=10_000) if j.kind in ("delivery", "pipeline")]
        failed = [j for j in queue.jobs(limit=10_000) if j.state in ("dead",)]
    return {"workers": workers, "jobs": len(done), "seconds": seconds, "dead": len(failed)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", required=True)
    parser.add_argument("--prs", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "worker_scaling.md"))
    args = parser.parse_args()
    results: dict[int, list[dict]] = {1: [], 2: []}
    for round_index in range(args.repeat):
        for workers in (1, 2):
            url, drop = scratch_schema(args.postgres)
            try:
                with tempfile.TemporaryDirectory(prefix="prbot-scale-") as tmp:
                    result = one_round(Path(tmp), url, workers, args.prs, round_index)
            finally:
                drop()
            print(result, flush=True)
            results[workers].append(result)
    rate = {w: statistics.median(r["jobs"] / r["seconds"] for r in rs) for w, rs in results.items()}
    load = os.getloadavg()[0]
    row_lines = []
    for workers, rounds in results.items():
        timings = ", ".join(f"{r['jobs']} in {r['seconds']:.1f} s" for r in rounds)
        dead = sum(r["dead"] for r in rounds)
        row_lines.append(f"| {workers} | {timings} | {rate[workers]:.2f} | {dead} |")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = (
        "uv run python benchmarks/worker_scaling.py --postgres URL "
        f"--prs {args.prs} --repeat {args.repeat}"
    )
    setup = (
        f"{os.cpu_count()} cores, 1-minute load average {load:.1f} at the end, {when}. One "
        f"PostgreSQL; per round a scratch schema, {args.prs} PRs each pushed once (4 backend "
        "modules of ~170 lines changed), their `synchronize` deliveries stored with no worker "
        "running, then `prbot worker --dry-run --threads 2` processes started and timed from the "
        "first lease until every delivery and pipeline job is done (git fetch from the local "
        "GitHub test server, every check, stored report). Rounds alternate 1 and 2 workers."
    )
    reading = (
        f"Two workers versus one: **{rate[2] / rate[1]:.2f}×** jobs per second. Each job is "
        "taken once (`FOR UPDATE SKIP LOCKED`; tests/test_store_concurrency.py), so the ceiling "
        f"is the cores: on {os.cpu_count()} cores a second process adds at most what the first "
        "leaves idle (waits on git and the database, the other core)."
    )
    page = (
        "\n\n".join(
            [
                "# Worker scaling on PostgreSQL",
                f"`{command}`",
                setup,
                "| Workers | Rounds (jobs done in) | Jobs/s (median) | Dead jobs |\n"
                "| --- | --- | ---: | ---: |\n" + "\n".join(row_lines),
                reading,
            ]
        )
        + "\n"
    )
    Path(args.out).write_text(page)
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
