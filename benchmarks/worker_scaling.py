"""Two `prbot worker` processes against one, on one PostgreSQL, on a CPU-bound pipeline.

    uv run python benchmarks/worker_scaling.py --postgres postgresql://postgres@127.0.0.1:5432/test
    uv run python benchmarks/worker_scaling.py --postgres URL --pipeline heavy --prs 8

A local GitHub test server holds a repository shaped like vLLM's attention code (a registry,
backends, requirement files), with ``--prs`` open PRs, each touching several Python files so
the checks parse and compare real code (``--pipeline light``, ~0.1 s a job).

``--pipeline heavy`` uses the generated vLLM-shaped repository of benchmarks/_ml_repo.py
instead (``--files`` files, ``vllm`` rules): each PR adds an MLA backend, edits model files
and moves a bound in requirements/common.txt (one of four sets, so prbot's result cache
answers some of them), and the requirements check resolves every platform with real uv
against a local HTTP index (benchmarks/_local_index.py). uv's cache is shared by every round
and warmed by an untimed round first, so the rounds measure CPU, not index fetches.

For each worker count (1, then 2, alternating for ``--repeat`` rounds) every PR gets a fresh
push and its signed ``pull_request.synchronize`` delivery; the intake stores them with no
worker running, then that many ``prbot worker`` processes start and the clock runs until the
queue is drained (every delivery and pipeline job done). Figures: jobs per second, and
2-worker / 1-worker, to docs/benchmarks/worker_scaling.md (heavy: worker_scaling_heavy.md).
Each round uses a scratch schema, dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _local_index import IndexServer, write_index  # noqa: E402
from _ml_repo import (  # noqa: E402
    DOC,
    RepoShape,
    base_tree,
    generated_doc,
    index_packages,
    pr_change,
)

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for  # noqa: E402
from bot.store.queue import Queue  # noqa: E402
from bot.testing.pg_schema import scratch_schema  # noqa: E402

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


@dataclass
class HeavyFixture:
    """The generated repository and what its requirements resolve against, built once."""

    tree: dict[str, str]
    index: IndexServer
    uv_cache: Path


def light_prs(gh, prs: int, round_index: int) -> list[int]:  # noqa: ANN001
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
    return numbers


def heavy_prs(gh, prs: int, tree: dict[str, str]) -> list[int]:  # noqa: ANN001
    numbers = []
    for n in range(prs):
        branch = f"feature{n}"
        gh.commit(REPO, branch, {"README.md": tree["README.md"] + f"\nPR {n}\n"}, "start")
        numbers.append(
            gh.open_pull_request(
                REPO, head_branch=branch, title=f"Add MLA backend {n}", author="alice"
            )["number"]
        )
    for n, number in enumerate(numbers):
        gh.push(REPO, number, pr_change(tree, n + 1, variant=n % 4), "backend")
    return numbers


def one_round(
    root: Path, url: str, workers: int, prs: int, round_index: int, heavy: HeavyFixture | None
) -> dict:
    if heavy is None:
        files = {f"vllm/attention/backends/b{i}.py": backend_source(i, 0) for i in range(12)}
        files["requirements/common.txt"] = "numpy>=1.26\nregex\n"
        files["README.md"] = "# widgets\n"
    else:
        files = heavy.tree
    rules = "default" if heavy is None else "vllm"
    with LocalStack(
        root, with_worker=False, database_url=url, dry_run=True, default_rules=rules
    ) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files=files)
        served_before = heavy.index.requests_served if heavy is not None else 0
        if heavy is not None:
            # The pipeline's uv cache (bot/worker/handlers/pipeline.py) is the shared, warmed one.
            stack.settings.data_dir.mkdir(parents=True, exist_ok=True)
            (stack.settings.data_dir / "uv-cache").symlink_to(heavy.uv_cache)
            numbers = heavy_prs(gh, prs, heavy.tree)
        else:
            numbers = light_prs(gh, prs, round_index)
        for number in numbers:
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
    result = {"workers": workers, "jobs": len(done), "seconds": seconds, "dead": len(failed)}
    if heavy is not None:
        # 0 once the warm-up has filled uv's cache: the round fetched nothing from the index.
        result["index_requests"] = heavy.index.requests_served - served_before
    return result


def heavy_fixture(root: Path, files: int) -> HeavyFixture:
    write_index(root / "index", index_packages())
    index = IndexServer(root / "index").start()
    tree = base_tree(RepoShape(files), index.url)
    tree[DOC] = generated_doc(tree, root)
    (root / "uv-cache").mkdir()
    return HeavyFixture(tree=tree, index=index, uv_cache=root / "uv-cache")


def run_round(args: argparse.Namespace, workers: int, round_index: int, heavy) -> dict:  # noqa: ANN001
    url, drop = scratch_schema(args.postgres, "prbot_scale")
    try:
        with tempfile.TemporaryDirectory(prefix="prbot-scale-") as tmp:
            return one_round(Path(tmp), url, workers, args.prs, round_index, heavy)
    finally:
        drop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", required=True)
    parser.add_argument("--prs", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--pipeline",
        choices=("light", "heavy"),
        default="light",
        help="light: 12 small backend modules; heavy: the generated vLLM-shaped repository",
    )
    parser.add_argument("--files", type=int, default=3000, help="heavy: repository size")
    parser.add_argument("--out", default=None, help="default: docs/benchmarks/worker_scaling*.md")
    args = parser.parse_args()
    page_name = "worker_scaling.md" if args.pipeline == "light" else "worker_scaling_heavy.md"
    out = Path(args.out) if args.out else ROOT / "docs" / "benchmarks" / page_name
    results: dict[int, list[dict]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="prbot-scale-fixture-") as fixture_dir:
        heavy = None
        if args.pipeline == "heavy":
            heavy = heavy_fixture(Path(fixture_dir), args.files)
            # Untimed: fills uv's shared cache, so no timed round fetches from the index.
            print("warm-up (not counted):", run_round(args, 2, 0, heavy), flush=True)
        try:
            for round_index in range(args.repeat):
                for workers in (1, 2):
                    result = run_round(args, workers, round_index, heavy)
                    print(result, flush=True)
                    results[workers].append(result)
        finally:
            if heavy is not None:
                heavy.index.stop()
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
    if heavy is not None:
        command += f" --pipeline heavy --files {args.files}"
    setup = (
        f"{os.cpu_count()} cores, 1-minute load average {load:.1f} at the end, {when}. One "
        f"PostgreSQL; per round a scratch schema, {args.prs} PRs each pushed once (4 backend "
        "modules of ~170 lines changed), their `synchronize` deliveries stored with no worker "
        "running, then `prbot worker --dry-run --threads 2` processes started and timed from the "
        "first lease until every delivery and pipeline job is done (git fetch from the local "
        "GitHub test server, every check, stored report). Rounds alternate 1 and 2 workers."
    )
    if heavy is not None:
        setup = (
            f"{os.cpu_count()} cores, 1-minute load average {load:.1f} at the end, {when}. One "
            f"PostgreSQL; per round a scratch schema and the generated vLLM-shaped repository "
            f"({len(heavy.tree)} files, benchmarks/_ml_repo.py, `vllm` rules), {args.prs} PRs "
            "each pushed once (a new MLA backend with its registry entry and CUDA priority "
            "lists, six model files, a moved bound in requirements/common.txt, one of four "
            "requirement sets), their `synchronize` deliveries stored with no worker running, "
            "then `prbot worker --dry-run --threads 2` processes started and timed from the "
            "first lease until every delivery and pipeline job is done (git fetch, every check "
            "including uv resolving each platform against a local HTTP index with a warm uv "
            "cache shared by the rounds, stored report). An untimed round warms that cache "
            "first. Rounds alternate 1 and 2 workers. Index requests during the timed rounds: "
            f"{sum(r.get('index_requests', 0) for rs in results.values() for r in rs)}."
        )
    reading = (
        f"Two workers versus one: **{rate[2] / rate[1]:.2f}×** jobs per second. Each job is "
        "taken once (`FOR UPDATE SKIP LOCKED`; tests/test_store_concurrency.py), so the ceiling "
        f"is the cores: on {os.cpu_count()} cores a second process adds at most what the first "
        "leaves idle (waits on git and the database, the other core)."
    )
    if heavy is not None:
        reading += (
            " Here one worker process can fill both cores by itself: two pipelines on its two "
            "threads, and up to four uv processes per requirements check."
        )
    page = (
        "\n\n".join(
            [
                "# Worker scaling on PostgreSQL"
                + (", CPU-bound pipeline" if heavy is not None else ""),
                f"`{command}`",
                setup,
                "| Workers | Rounds (jobs done in) | Jobs/s (median) | Dead jobs |\n"
                "| --- | --- | ---: | ---: |\n" + "\n".join(row_lines),
                reading,
            ]
        )
        + "\n"
    )
    out.write_text(page)
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
