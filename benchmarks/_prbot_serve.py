"""A real ``prbot serve`` process for the pipeline benchmark: started on a data directory
with its log in a file, waited for (intake, then its worker process), drained, stopped."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bot.testing.github_server import FakeGitHub

ROOT = Path(__file__).resolve().parents[1]
SECRET = "pipeline-bench-secret"
_JOB_DONE = re.compile(r"job \d+ \((\w+)\) done in ([0-9.]+)s")


class BenchError(RuntimeError):
    """The benchmark could not run (a server did not start, a comment never came)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Serve:
    """A ``prbot serve`` process on one data directory; its log goes to a file."""

    data_dir: Path
    github: FakeGitHub
    key_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    log_offset: int = 0

    @property
    def log_path(self) -> Path:
        return self.data_dir / "serve.log"

    @property
    def database_url(self) -> str:
        return f"sqlite:///{self.data_dir / 'prbot.sqlite'}"

    @property
    def webhook_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/webhooks/github"

    def start(self, timeout: float = 120.0) -> Serve:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            {
                "PRBOT_WEBHOOK_SECRET": SECRET,
                "PRBOT_APP_ID": str(self.github.app_id),
                "PRBOT_PRIVATE_KEY_PATH": str(self.key_path),
                "PRBOT_DATABASE_URL": self.database_url,
                "PRBOT_GITHUB_API_URL": self.github.url,
                "PRBOT_DATA_DIR": str(self.data_dir),
                "PRBOT_DEFAULT_RULES": "vllm",
                "PRBOT_POLL_SECONDS": "0.05",
                "PRBOT_GITHUB_REQUEST_INTERVAL": "0",
                "PRBOT_GITHUB_WRITE_INTERVAL": "0",
                "PRBOT_LOG_LEVEL": "INFO",
            }
        )
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(ROOT),
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise BenchError(f"prbot serve exited: {self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).is_success:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise BenchError("prbot serve did not answer /healthz")
            time.sleep(0.1)

    def wait_for_worker(self, timeout: float = 120.0) -> None:
        """Until the supervised worker process says it is polling (its imports take seconds,
        and are no part of any PR's time)."""
        deadline = time.monotonic() + timeout
        while "prbot: worker started" not in self.log_path.read_text(errors="replace"):
            if self.process is not None and self.process.poll() is not None:
                raise BenchError(f"prbot serve exited: {self.log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise BenchError("the worker process did not start")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)

    def wait_idle(self, timeout: float = 120.0) -> None:
        """Until no job is leased or due (a periodic one may wait hours ahead), so one PR's
        trailing jobs neither run into the next PR's time nor into its log lines."""
        from datetime import UTC, datetime

        from bot.store import db
        from bot.store.queue import Queue

        engine = db.make_engine(self.database_url)
        queue = Queue(engine)
        deadline = time.monotonic() + timeout
        try:
            while True:
                now = datetime.now(UTC)
                due = [
                    job
                    for job in queue.jobs("queued", limit=1000)
                    if job.run_after is None or job.run_after.replace(tzinfo=UTC) <= now
                ]
                if not due and queue.depth()["leased"] == 0:
                    return
                if time.monotonic() > deadline:
                    raise BenchError("the queue did not drain")
                time.sleep(0.05)
        finally:
            engine.dispose()

    def new_log_lines(self) -> list[str]:
        text = self.log_path.read_text(errors="replace")
        lines, self.log_offset = text[self.log_offset :].splitlines(), len(text)
        return lines


def job_seconds(lines: list[str]) -> dict[str, float]:
    """Seconds per job kind, summed, from the worker's ``job N (kind) done in X.XXs`` lines."""
    totals: dict[str, float] = {}
    for line in lines:
        match = _JOB_DONE.search(line)
        if match:
            totals[match.group(1)] = totals.get(match.group(1), 0.0) + float(match.group(2))
    return totals
