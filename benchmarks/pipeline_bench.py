"""The whole pipeline on a large vLLM-shaped repository, event to comment, with uv's cache
cold and warm.

    uv run python benchmarks/pipeline_bench.py                 # full size: ~3,000 files, 5 rounds
    uv run python benchmarks/pipeline_bench.py --files 300 --repeat 1 --out /tmp/pipeline.md

A generated repository of about ``--files`` files (benchmarks/_ml_repo.py: attention backends,
their registry and CUDA priority lists, model and test modules, CUDA sources, requirement
files with ``-r``/``-c`` includes and platform markers for cuda/rocm/cpu/xpu/tpu, the
attention-backend doc filled in by ``prbot docs --write``) sits on the local GitHub test
server. Its ``.github/prbot.yml`` extends the built-in ``vllm`` rules and points uv at a
local package index over HTTP (benchmarks/_local_index.py), so the requirements check
resolves with real uv and no internet.

Each round starts a real ``prbot serve`` (SQLite, one supervised worker process,
``PRBOT_DEFAULT_RULES=vllm``) on a fresh data directory, waits for its worker process, runs
one untimed PR on a one-file repository (the worker's first imports), then three PRs on the
big repository, one after the other, each adding an MLA backend, editing model files and
moving a bound in requirements/common.txt (a requirement set uv has not resolved before):

- **cold**: the first: uv's cache empty, no git mirror (cloned on the way), a new store;
- **warm**: the second, on the same server: uv's cache and the mirror as the first left them;
- **uv-cold**: the third, with uv's cache (``$PRBOT_DATA_DIR/uv-cache``) emptied first:
  everything else warm, so it isolates uv's cache.

Timed: the signed ``pull_request.opened`` POST until the report comment with the head SHA is
on the test server (polled from its state). Also reported per PR: the worker's own ``job ...
done in`` figure per job kind (serve's log), the requirement cells uv resolved and the
requests the index served, from the stored report every section's status. The stored report
has no per-check timings, so no per-check breakdown is given. Medians over ``--repeat``
rounds, and their ratios to cold; the page goes to docs/benchmarks/pipeline.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import httpx  # noqa: E402
from _local_index import IndexServer, write_index  # noqa: E402
from _ml_repo import (  # noqa: E402
    DOC,
    RepoShape,
    base_tree,
    generated_doc,
    index_packages,
    pr_change,
)
from _prbot_serve import SECRET, BenchError, Serve, job_seconds  # noqa: E402

from bot.cli.replay import send  # noqa: E402
from bot.testing.github_server import FakeGitHub  # noqa: E402

REPO = "acme/vllm"
# A one-file repository whose PR runs first on each new server, so the worker process's first
# imports of the checks are not counted against the cold PR (it has no requirements: uv's
# cache stays empty, and the big repository's mirror is not touched).
WARMUP_REPO = "acme/warmup"
INSTALLATION_ID = 1


def _generated_doc(tree: dict[str, str], work: Path) -> str:
    try:
        return generated_doc(tree, work)
    except RuntimeError as exc:
        raise BenchError(str(exc)) from None


def report_summary(database_url: str, number: int) -> dict:
    """Section statuses and the requirements cells uv resolved, from the stored report."""
    from bot.store import db
    from bot.store.state import latest_report

    engine = db.make_engine(database_url)
    try:
        stored = latest_report(engine, REPO, number)
    finally:
        engine.dispose()
    if stored is None:
        raise BenchError(f"no stored report for #{number}")
    sections = stored["report"].get("sections", [])
    summary = {"sections": {s["check"]: s["status"] for s in sections}}
    for section in sections:
        if section["check"] == "requirements":
            findings = [f for f in section.get("findings", []) if "resolution" in f]
            summary["cells"] = len(findings)
            summary["uv_cells"] = sum(
                f["resolution"] != "skipped" and not f.get("cached") for f in findings
            )
            summary["resolved_ok"] = sum(f["resolution"] == "ok" for f in findings)
            summary["cached_cells"] = sum(bool(f.get("cached")) for f in findings)
    return summary


def open_pr(gh: FakeGitHub, tree: dict[str, str], number_hint: int, variant: int) -> int:
    branch = f"bench-{number_hint}"
    gh.commit(REPO, branch, pr_change(tree, number_hint, variant), f"Add BENCH_MLA_{number_hint}")
    pull = gh.open_pull_request(
        REPO,
        head_branch=branch,
        title=f"[Attention] Add the BENCH_MLA_{number_hint} MLA decode backend",
        body="Adds an MLA decode backend, wires it into the CUDA priority lists and bumps a "
        "common requirement.",
        author="contributor",
    )
    return pull["number"]


def comment_for(gh: FakeGitHub, number: int, head_sha: str, repo: str = REPO) -> dict | None:
    for comment in gh.comments(repo, number):
        if head_sha in (comment.get("body") or ""):
            return comment
    return None


def deliver_and_wait(
    serve: Serve, gh: FakeGitHub, repo: str, number: int, timeout: float, client: httpx.Client
) -> float:
    """Seconds from the signed ``opened`` POST to the report comment with the head SHA."""
    event = gh.pull_request_event(repo, number, "opened")
    head_sha = event["pull_request"]["head"]["sha"]
    body = json.dumps(event).encode()
    started = time.monotonic()
    response = send(serve.webhook_url, "pull_request", body, SECRET, client=client)
    if response.status_code != 202:
        raise BenchError(f"delivery refused: {response.status_code} {response.text[:200]}")
    deadline = started + timeout
    while comment_for(gh, number, head_sha, repo) is None:
        if time.monotonic() > deadline:
            raise BenchError(f"no report comment on {repo}#{number} after {timeout:g}s")
        time.sleep(0.02)
    return time.monotonic() - started


def warm_up(
    serve: Serve, gh: FakeGitHub, round_index: int, timeout: float, client: httpx.Client
) -> None:
    branch = f"warmup-{round_index}"
    gh.commit(WARMUP_REPO, branch, {f"notes/round_{round_index}.py": "VALUE = 1\n"})
    pull = gh.open_pull_request(WARMUP_REPO, head_branch=branch, title="Warm-up")
    deliver_and_wait(serve, gh, WARMUP_REPO, pull["number"], timeout, client)


def measure(
    serve: Serve,
    gh: FakeGitHub,
    index: IndexServer,
    tree: dict[str, str],
    number_hint: int,
    variant: int,
    timeout: float,
    client: httpx.Client,
) -> dict:
    number = open_pr(gh, tree, number_hint, variant)
    served_before = index.requests_served
    serve.wait_idle()
    serve.new_log_lines()
    seconds = deliver_and_wait(serve, gh, REPO, number, timeout, client)
    # Closed on the test server once measured, so every run's first reconcile lists the same
    # open PRs (none but its own) whatever round it is in.
    gh.close_pull_request(REPO, number)
    # The pipeline job's "done" line, and its jobs_dispatch, come after the comment.
    serve.wait_idle()
    summary = report_summary(serve.database_url, number)
    summary.update(
        number=number,
        seconds=seconds,
        jobs=job_seconds(serve.new_log_lines()),
        index_requests=index.requests_served - served_before,
    )
    return summary


def build_fixture(root: Path, files: int) -> tuple[FakeGitHub, IndexServer, dict, dict]:
    packages = index_packages()
    written = write_index(root / "index", packages)
    index = IndexServer(root / "index").start()
    tree = base_tree(RepoShape(files), index.url)
    tree[DOC] = _generated_doc(tree, root)
    gh = FakeGitHub(root=root / "github").start()
    gh.add_installation(INSTALLATION_ID, "acme")
    gh.create_repo(REPO, installation_id=INSTALLATION_ID, files=tree)
    gh.create_repo(WARMUP_REPO, installation_id=INSTALLATION_ID, files={"README.md": "# w\n"})
    info = {
        "files": len(tree),
        "megabytes": sum(len(text.encode()) for text in tree.values()) / 1e6,
        "python_files": sum(path.endswith(".py") for path in tree),
        "index_files": written,
        "index_packages": len(packages),
    }
    return gh, index, tree, info


# Per round, in order: (phase, what it says). "uv-cold" empties uv's cache just before.
PHASES = (
    ("cold", "first PR on a fresh data directory: empty uv cache, no git mirror, new store"),
    ("warm", "next PR on the same server: uv cache and mirror as the cold PR left them"),
    ("uv-cold", "next PR again, uv's cache emptied first: mirror, store and worker warm"),
)


def run(args: argparse.Namespace) -> tuple[list[dict], dict]:
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="prbot-pipeline-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        gh, index, tree, info = build_fixture(root, args.files)
        key_path = root / "app.pem"
        key_path.write_text(gh.private_key_pem)
        key_path.chmod(0o600)
        print(f"fixture: {info}", flush=True)
        number_hint = 0
        try:
            with httpx.Client(timeout=30) as client:
                for round_index in range(args.repeat):
                    serve = Serve(root / f"round-{round_index}", gh, key_path).start()
                    try:
                        serve.wait_for_worker()
                        warm_up(serve, gh, round_index, args.timeout, client)
                        for variant, (phase, _) in enumerate(PHASES):
                            if phase == "uv-cold":
                                # Where the pipeline keeps uv's cache
                                # (bot/worker/handlers/pipeline.py).
                                shutil.rmtree(serve.data_dir / "uv-cache", ignore_errors=True)
                            number_hint += 1
                            result = measure(
                                serve,
                                gh,
                                index,
                                tree,
                                number_hint=number_hint,
                                variant=variant,
                                timeout=args.timeout,
                                client=client,
                            )
                            result.update(phase=phase, round=round_index)
                            print(json.dumps(result), flush=True)
                            runs.append(result)
                    finally:
                        serve.stop()
        finally:
            gh.stop()
            index.stop()
    return runs, info


def median_of(runs: list[dict], phase: str) -> float:
    values = [r["seconds"] for r in runs if r["phase"] == phase]
    return statistics.median(values) if values else float("nan")


def render_page(runs: list[dict], info: dict, args: argparse.Namespace, load: tuple) -> str:
    medians = {phase: median_of(runs, phase) for phase, _ in PHASES}
    rows = []
    for r in runs:
        jobs = ", ".join(f"{kind} {sec:.2f}" for kind, sec in sorted(r["jobs"].items()))
        sections = ", ".join(f"{check} {status}" for check, status in r["sections"].items())
        rows.append(
            f"| {r['round'] + 1} | {r['phase']} | #{r['number']} | {r['seconds']:.2f} | {jobs} | "
            f"{r.get('uv_cells')} of {r.get('cells')} ({r.get('resolved_ok')} ok) | "
            f"{r['index_requests']} | {sections} |"
        )
    command = (
        f"uv run python benchmarks/pipeline_bench.py --files {args.files} --repeat {args.repeat}"
    )
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = (
        f"{os.cpu_count()} cores, 1-minute load average {load[0]:.1f} before and {load[1]:.1f} "
        f"after, {when}"
    )
    fixture = (
        f"{info['files']} files ({info['python_files']} Python, {info['megabytes']:.1f} MB) in a "
        "vLLM-shaped layout generated by benchmarks/_ml_repo.py; requirements resolved against "
        f"a local HTTP index of {info['index_packages']} packages ({info['index_files']} wheels)"
    )
    summary = (
        "| uv cache | What | Event → comment, median (s) | Ratio to cold |\n"
        "| --- | --- | ---: | ---: |\n"
        + "\n".join(
            f"| {phase} | {what} | {medians[phase]:.2f} | {medians[phase] / medians['cold']:.2f}× |"
            for phase, what in PHASES
        )
    )
    headline = (
        f"Event to comment, median of {args.repeat}: cold **{medians['cold']:.2f} s**, warm "
        f"**{medians['warm']:.2f} s**, warm/cold **{medians['warm'] / medians['cold']:.2f}×**; "
        f"uv's cache alone (warm vs uv-cold): **{medians['warm'] / medians['uv-cold']:.2f}×**."
    )
    table = (
        "| Round | uv cache | PR | Event → comment (s) | Worker job time (s) | "
        "Cells uv resolved | Index requests | Sections |\n"
        "| ---: | --- | ---: | ---: | --- | --- | ---: | --- |\n" + "\n".join(rows)
    )
    reading = (
        "Each PR adds an MLA backend (module, registry entry, CUDA priority lists, so the doc "
        "drifts and the integration, review and jobs checks have work), edits six model files "
        "and moves a lower bound in requirements/common.txt, so every platform's effective set "
        "is new and uv runs for each cell rather than prbot's result cache answering (*Cells uv "
        "resolved*: not cached, not skipped; ppc64le and s390x have no uv platform). *Index "
        "requests* are the GETs the local index served during the PR (pages and wheels): uv's "
        "cache at work. The index is on the same machine, so a cold cache costs here what it "
        "costs with no network latency; from PyPI it costs more. *Worker job time* is the "
        "worker's own `job … done in` figure per job kind, from serve's log; it runs a little "
        "past the comment (the check run is completed after it). Before the cold PR, each "
        "round runs one untimed PR on a one-file repository, so the worker process's first "
        "imports are not counted; the cold PR still pays the mirror's clone and the first "
        "reconcile of the open PRs, which uv-cold does not. Measured PRs are closed once "
        "timed, so each run's open-PR index holds only itself (the duplicates check's cost at "
        "2,000 and 20,000 open PRs is in duplicates.md). The stored report carries no "
        "per-check timings, so no per-check breakdown is given."
    )
    return (
        "\n\n".join(
            [
                "# The whole pipeline, event to comment, uv cache cold and warm",
                f"`{command}`",
                f"Machine: {machine}. Fixture: {fixture}. One `prbot serve` per round (SQLite, "
                "one supervised worker process, `PRBOT_DEFAULT_RULES=vllm`), timed from the "
                "signed `pull_request.opened` POST until the report comment with the head SHA "
                "is on the local GitHub test server.",
                headline,
                summary,
                table,
                reading,
            ]
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000, help="rough size of the repository")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (cold, warm, uv-cold each)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait per comment")
    parser.add_argument("--keep", default=None, help="work in this directory and keep it")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "pipeline.md"))
    args = parser.parse_args()
    if args.files < 50 or args.repeat < 1:
        parser.error("--files must be at least 50 and --repeat at least 1")
    if args.keep and Path(args.keep).exists() and any(Path(args.keep).iterdir()):
        parser.error(f"--keep {args.keep}: not empty (a cold run needs a fresh directory)")
    load_before = os.getloadavg()[0]
    try:
        runs, info = run(args)
    except BenchError as exc:
        print(f"pipeline_bench: {exc}", file=sys.stderr)
        return 1
    page = render_page(runs, info, args, (load_before, os.getloadavg()[0]))
    Path(args.out).write_text(page)
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
