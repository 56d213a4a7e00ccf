"""Intake throughput and ack latency at a fixed offered load, beside a bare 202 endpoint.

Run by hand:  uv run python benchmarks/intake_bench.py [--rate 500] [--seconds 10]

Both servers run as separate uvicorn processes on loopback; an open-loop generator sends
signed ``pull_request.synchronize`` deliveries (unique GUIDs) at the offered rate to each in
turn, and records every request's latency. Figures go to docs/benchmarks/intake.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.webhooks import signature_for  # noqa: E402

SECRET = "bench-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sample_payload() -> bytes:
    """A real-shaped synchronize payload from the local GitHub test server."""
    from bot.testing.github_server import FakeGitHub

    with tempfile.TemporaryDirectory() as tmp, FakeGitHub(root=Path(tmp)) as gh:
        gh.add_installation(1, "acme")
        gh.create_repo("acme/widgets", installation_id=1, files={"a.py": "x = 1\n"})
        gh.commit("acme/widgets", "feature", {"a.py": "x = 2\n"})
        pull = gh.open_pull_request(
            "acme/widgets", head_branch="feature", title="Bench", body="A body " * 50
        )
        gh.push("acme/widgets", pull["number"], {"b.py": "y = 1\n"})
        return json.dumps(
            gh.pull_request_event("acme/widgets", pull["number"], "synchronize")
        ).encode()


def start_server(kind: str, port: int, data_dir: Path) -> subprocess.Popen:
    env = dict(
        os.environ,
        PRBOT_WEBHOOK_SECRET=SECRET,
        PRBOT_DATABASE_URL=f"sqlite:///{data_dir / 'bench.sqlite'}",
        PRBOT_DATA_DIR=str(data_dir),
        PYTHONPATH=str(ROOT),
    )
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_bench_servers.py")), kind, str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{kind} server did not start: {proc.stderr.read().decode()[-2000:]}")


async def offered_load(url: str, body: bytes, rate: float, seconds: float) -> dict:
    """Open loop: request i is sent at start + i/rate whatever earlier ones are doing."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    total = int(rate * seconds)
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def one(i: int, at: float) -> None:
            await asyncio.sleep(max(0.0, at - time.perf_counter()))
            headers = {
                "X-GitHub-Event": "pull_request",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": signature_for(body, SECRET),
                "Content-Type": "application/json",
            }
            sent = time.perf_counter()
            response = await client.post(url, content=body, headers=headers)
            latencies.append(time.perf_counter() - sent)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        start = time.perf_counter() + 0.2
        began = time.perf_counter()
        await asyncio.gather(*(one(i, start + i / rate) for i in range(total)))
        elapsed = time.perf_counter() - began
    latencies.sort()
    return {
        "requests": total,
        "throughput": total / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "statuses": statuses,
    }


async def saturation(url: str, body: bytes, seconds: float, concurrency: int = 32) -> float:
    """Closed loop with fixed concurrency: the most requests per second the server answers."""
    done = 0
    stop_at = time.perf_counter() + seconds
    async with httpx.AsyncClient(timeout=30) as client:

        async def loop() -> None:
            nonlocal done
            while time.perf_counter() < stop_at:
                headers = {
                    "X-GitHub-Event": "pull_request",
                    "X-GitHub-Delivery": str(uuid.uuid4()),
                    "X-Hub-Signature-256": signature_for(body, SECRET),
                    "Content-Type": "application/json",
                }
                await client.post(url, content=body, headers=headers)
                done += 1

        began = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        return done / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "intake.md"))
    args = parser.parse_args()
    body = sample_payload()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("bare", "intake"):
            port = free_port()
            proc = start_server(kind, port, Path(tmp) / kind)
            try:
                url = f"http://127.0.0.1:{port}/webhooks/github"
                asyncio.run(offered_load(url, body, 50, 1))  # warm-up
                fixed = asyncio.run(offered_load(url, body, args.rate, args.seconds))
                fixed["saturation"] = asyncio.run(saturation(url, body, args.seconds / 2))
                results[kind] = fixed
            finally:
                proc.terminate()
                proc.wait(timeout=10)
    bare, intake = results["bare"], results["intake"]
    lines = [
        "# Intake benchmark",
        "",
        f"`uv run python benchmarks/intake_bench.py --rate {args.rate:g} --seconds "
        f"{args.seconds:g}` on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}. "
        f"Payload: a {len(body):,}-byte signed `pull_request.synchronize`; SQLite store.",
        "",
        "| Endpoint | Offered | Achieved req/s | p50 ms | p99 ms | Saturation req/s | Statuses |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for kind, r in (("bare uvicorn 202", bare), ("prbot intake", intake)):
        lines.append(
            f"| {kind} | {args.rate:g}/s | {r['throughput']:.0f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['saturation']:.0f} | {r['statuses']} |"
        )
    lines += [
        "",
        f"Intake/bare throughput at the offered load: "
        f"**{intake['throughput'] / bare['throughput']:.2f}×**; at saturation: "
        f"**{intake['saturation'] / bare['saturation']:.2f}×** (target ≥ 0.5×). "
        f"Intake p99 at {args.rate:g} req/s: **{intake['p99_ms']:.1f} ms** (target < 50 ms).",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
