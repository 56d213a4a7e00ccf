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


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams.

    httpx's per-request overhead would make the generator, not the server, the bottleneck
    at 500 req/s on two cores; this one only writes prepared bytes and reads the answer.
    """

    def __init__(self, host: str, port: int, path: str, body: bytes) -> None:
        self.host, self.port = host, port
        signature = signature_for(body, SECRET)
        self.head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Content-Type: application/json\r\nX-GitHub-Event: pull_request\r\n"
            f"X-Hub-Signature-256: {signature}\r\nContent-Length: {len(body)}\r\n"
        ).encode()
        self.body = body
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self) -> int:
        if self.idle:
            try:
                return await self._post(self.idle.pop())
            except (OSError, asyncio.IncompleteReadError, IndexError):
                pass  # the server closed an idle keep-alive connection; use a fresh one
        return await self._post(await asyncio.open_connection(self.host, self.port))

    async def _post(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> int:
        reader, writer = conn
        guid = uuid.uuid4().hex
        writer.write(self.head + f"X-GitHub-Delivery: {guid}\r\n\r\n".encode() + self.body)
        await writer.drain()
        status_line = await reader.readline()
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        await reader.readexactly(length)
        self.idle.append(conn)
        return int(status_line.split()[1])

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


async def offered_load(client: RawClient, rate: float, seconds: float) -> dict:
    """Open loop: request i is due at start + i/rate; latency counts from when it was due,
    so a server that falls behind is charged for the queueing it causes."""
    latencies: list[float] = []
    statuses: dict[int | str, int] = {}
    total = int(rate * seconds)

    async def one(due: float) -> None:
        try:
            code: int | str = await client.post()
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
            code = type(exc).__name__
        latencies.append(time.perf_counter() - due)
        statuses[code] = statuses.get(code, 0) + 1

    tasks = []
    start = time.perf_counter() + 0.1
    for i in range(total):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(due)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "requests": total,
        "throughput": total / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "statuses": statuses,
    }


async def saturation(client: RawClient, seconds: float, concurrency: int = 16) -> float:
    """Closed loop with fixed concurrency: the most requests per second the server answers."""
    done = 0
    stop_at = time.perf_counter() + seconds

    async def loop() -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            try:
                await client.post()
                done += 1
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                pass

    began = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return done / (time.perf_counter() - began)


async def measure(port: int, body: bytes, rate: float, seconds: float) -> dict:
    client = RawClient("127.0.0.1", port, "/webhooks/github", body)
    try:
        await offered_load(client, 50, 1)  # warm-up: connections, caches, SQLite pages
        result = await offered_load(client, rate, seconds)
        result["saturation"] = await saturation(client, seconds / 2)
        return result
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="alternate bare/intake this many times; medians are reported",
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "intake.md"))
    args = parser.parse_args()
    body = sample_payload()
    runs: dict[str, list[dict]] = {"bare": [], "intake": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(args.repeat):
            for kind in ("bare", "intake"):
                port = free_port()
                proc = start_server(kind, port, Path(tmp) / f"{kind}{round_number}")
                try:
                    runs[kind].append(asyncio.run(measure(port, body, args.rate, args.seconds)))
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
    bare, intake = _medians(runs["bare"]), _medians(runs["intake"])
    lines = [
        "# Intake benchmark",
        "",
        f"`uv run python benchmarks/intake_bench.py --rate {args.rate:g} --seconds "
        f"{args.seconds:g} --repeat {args.repeat}` on {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d')}. Payload: a {len(body):,}-byte signed "
        "`pull_request.synchronize`; SQLite store; no worker. The two servers alternate "
        f"for {args.repeat} rounds and the figures are medians over rounds (each round's p99 "
        "listed). The load generator shares the two cores with the server.",
        "",
        "| Endpoint | Offered | Achieved req/s | p50 ms | p99 ms | p99 per round | "
        "Saturation req/s | Statuses |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for kind, r in (("bare uvicorn 202", bare), ("prbot intake", intake)):
        lines.append(
            f"| {kind} | {args.rate:g}/s | {r['throughput']:.0f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.1f} | {r['p99_each']} | {r['saturation']:.0f} | "
            f"{r['statuses']} |"
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


def _medians(rounds: list[dict]) -> dict:
    merged: dict = {
        key: statistics.median(r[key] for r in rounds)
        for key in ("throughput", "p50_ms", "p99_ms", "saturation")
    }
    statuses: dict = {}
    for r in rounds:
        for code, count in r["statuses"].items():
            statuses[code] = statuses.get(code, 0) + count
    merged["statuses"] = statuses
    merged["p99_each"] = ", ".join(f"{r['p99_ms']:.0f}" for r in rounds)
    return merged


if __name__ == "__main__":
    main()
