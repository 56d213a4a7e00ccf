"""Shared by the intake tests: signed requests, an in-process intake, a real `prbot serve`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx

from bot.events.webhooks import signature_for
from bot.runtime.settings import Settings

SECRET = "intake-test-secret"
ROOT = Path(__file__).resolve().parent.parent


def signed_headers(body: bytes, event: str, guid: str | None = None) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": guid or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature_for(body, SECRET),
    }


@contextmanager
def intake(engine, data_dir: Path, **overrides):
    """The intake app (no workers) on a real uvicorn on 127.0.0.1; yields its base URL."""
    from bot.intake.server import create_app
    from bot.service import ThreadedServer

    settings = replace(Settings(webhook_secrets=(SECRET,), data_dir=data_dir), **overrides)
    with ThreadedServer(create_app(settings, engine)) as server:
        yield server.url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServeProcess:
    """`prbot serve` as a child process on 127.0.0.1 with a SQLite file in ``data_dir``."""

    def __init__(self, data_dir: Path, *args: str, **env: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir / "serve.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(data_dir)),
            "PRBOT_WEBHOOK_SECRET": SECRET,
            "PRBOT_DATA_DIR": str(data_dir),
            "PRBOT_DATABASE_URL": f"sqlite:///{data_dir / 'prbot.sqlite'}",
            "PRBOT_POLL_SECONDS": "0.1",
            **env,
        }
        self.args = ["--host", "127.0.0.1", "--port", str(self.port), *args]
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> ServeProcess:
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bot", "serve", *self.args],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"serve did not start: {self.log.read_text()[-3000:]}")

    def rss_kib(self) -> int:
        """Resident memory of the serve process, from /proc/<pid>/status."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 45.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
