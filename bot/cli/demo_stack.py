"""A whole prbot on one machine: the local GitHub test server, the intake with its worker,
SQLite and real git. ``prbot demo``, the end-to-end tests and the benchmarks share it."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bot.cli.replay import send
from bot.runtime.settings import CiSettings, Settings
from bot.service import Service, ThreadedServer
from bot.store.inbox import waiting_in_inbox
from bot.store.queue import Queue
from bot.testing.buildkite_server import FakeBuildkite
from bot.testing.github_server import FakeGitHub

WEBHOOK_SECRET = "demo-webhook-secret"
INSTALLATION_ID = 1
ORG = "acme"
BUILDKITE_API_TOKEN = "demo-buildkite-api-token"
BUILDKITE_WEBHOOK_TOKEN = "demo-buildkite-webhook-token"


class LocalStack:
    """Start with ``with LocalStack(tmp) as stack:``; everything lives under ``root``."""

    def __init__(
        self,
        root: Path,
        *,
        default_rules: str = "default",
        dry_run: bool = False,
        lease_seconds: float = 30.0,
        with_worker: bool = True,
        database_url: str | None = None,
        github_timeout: float = 30.0,
        buildkite: bool = False,
    ) -> None:
        self.root = Path(root)
        self.default_rules = default_rules
        self.dry_run = dry_run
        self.lease_seconds = lease_seconds
        self.with_worker = with_worker
        self.github_timeout = github_timeout
        self.database_url = database_url or f"sqlite:///{self.root / 'prbot.sqlite'}"
        self.github: FakeGitHub | None = None
        self.server: ThreadedServer | None = None
        self.service: Service | None = None
        # The intake closes a connection idle for PRBOT_INTAKE_KEEP_ALIVE (5 s) seconds; a
        # client that reuses one at that moment reads a reset (seen under load). Dropping idle
        # connections after 1 s keeps the client well inside the server's window.
        self.http = httpx.Client(timeout=30, limits=httpx.Limits(keepalive_expiry=1.0))
        # A local Buildkite for the GPU jobs: prbot dispatches to it, it sends signed webhooks.
        self.buildkite: FakeBuildkite | None = (
            FakeBuildkite(token=BUILDKITE_API_TOKEN, webhook_token=BUILDKITE_WEBHOOK_TOKEN)
            if buildkite
            else None
        )

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> LocalStack:
        self.root.mkdir(parents=True, exist_ok=True)
        self.github = FakeGitHub(root=self.root / "github").start()
        self.github.add_installation(INSTALLATION_ID, ORG)
        key_path = self.root / "app.pem"
        key_path.write_text(self.github.private_key_pem)
        key_path.chmod(0o600)
        ci = CiSettings()
        if self.buildkite is not None:
            self.buildkite.start()
            ci = CiSettings(
                buildkite_organization=self.buildkite.organization,
                buildkite_pipeline=self.buildkite.pipeline,
                buildkite_token=BUILDKITE_API_TOKEN,
                buildkite_api_url=self.buildkite.url,
                buildkite_webhook_tokens=(BUILDKITE_WEBHOOK_TOKEN,),
            )
        self.settings = Settings(
            webhook_secrets=(WEBHOOK_SECRET,),
            app_id=str(self.github.app_id),
            private_key_path=key_path,
            database_url=self.database_url,
            github_api_url=self.github.url,
            data_dir=self.root / "data",
            default_rules=self.default_rules,
            dry_run=self.dry_run,
            lease_seconds=self.lease_seconds,
            poll_seconds=0.05,
            github_timeout=self.github_timeout,
            github_request_interval=0,
            github_write_interval=0,
            ci=ci,
        )
        self.service = Service.from_settings(self.settings)
        app = self.service.asgi_app(with_worker=self.with_worker)
        self.server = ThreadedServer(app).start()
        if self.buildkite is not None:
            self.buildkite.webhook_url = f"{self.server.url}/webhooks/buildkite"
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.github is not None:
            self.github.stop()
        if self.buildkite is not None:
            self.buildkite.stop()
        self.http.close()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ helpers
    @property
    def webhook_url(self) -> str:
        assert self.server is not None
        return f"{self.server.url}/webhooks/github"

    def deliver(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        guid: str | None = None,
        secret: str = WEBHOOK_SECRET,
    ) -> httpx.Response:
        body = json.dumps(payload).encode()
        response = send(self.webhook_url, event, body, secret, guid, client=self.http)
        self.wait_for_inbox()
        return response

    def wait_for_inbox(self, timeout: float = 10.0) -> None:
        """Until what the intake acknowledged is in the database (SQLite moves it from the
        intake's inbox within milliseconds), so a worker driven by hand finds its job."""
        assert self.service is not None
        deadline = time.monotonic() + timeout
        while waiting_in_inbox(self.service.engine) and time.monotonic() < deadline:
            time.sleep(0.005)

    def idle(self) -> bool:
        """Nothing running and nothing due (a periodic reconcile may wait hours ahead)."""
        assert self.service is not None
        # Deliveries still on their way from the intake's inbox are work to come. Asked
        # first: a move commits the main database before it empties the inbox.
        if waiting_in_inbox(self.service.engine):
            return False
        queue = Queue(self.service.engine)
        now = datetime.now(UTC)
        due = [job for job in queue.jobs("queued", limit=1000) if job.run_after <= now]
        return not due and queue.depth()["leased"] == 0

    def worker_environment(self) -> dict[str, str]:
        """Environment for a separate ``prbot worker`` process on this stack."""
        env = dict(os.environ)
        env.update(
            {
                "PRBOT_WEBHOOK_SECRET": WEBHOOK_SECRET,
                "PRBOT_APP_ID": self.settings.app_id or "",
                "PRBOT_PRIVATE_KEY_PATH": str(self.settings.private_key_path),
                "PRBOT_DATABASE_URL": self.database_url,
                "PRBOT_GITHUB_API_URL": self.settings.github_api_url,
                "PRBOT_DATA_DIR": str(self.settings.data_dir),
                "PRBOT_DEFAULT_RULES": self.default_rules,
                "PRBOT_LEASE_SECONDS": str(self.lease_seconds),
                "PRBOT_POLL_SECONDS": "0.05",
                "PRBOT_GITHUB_TIMEOUT": str(self.github_timeout),
                "PRBOT_GITHUB_REQUEST_INTERVAL": "0",
                "PRBOT_GITHUB_WRITE_INTERVAL": "0",
            }
        )
        if self.buildkite is not None:
            env.update(
                {
                    "PRBOT_BUILDKITE_ORGANIZATION": self.buildkite.organization,
                    "PRBOT_BUILDKITE_PIPELINE": self.buildkite.pipeline,
                    "PRBOT_BUILDKITE_TOKEN": BUILDKITE_API_TOKEN,
                    "PRBOT_BUILDKITE_API_URL": self.buildkite.url,
                    "PRBOT_BUILDKITE_WEBHOOK_TOKEN": BUILDKITE_WEBHOOK_TOKEN,
                }
            )
        return env


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 60.0,
    interval: float = 0.05,
    what: str = "condition",
) -> Any:
    """Poll until ``predicate`` returns something truthy; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)


# --- GPU jobs: the local Buildkite's side of the demo ------------------------------------

BENCHMARK_SPECS = ("16q1s1k", "64q1s4k", "128q1s8k", "256q1s16k")


def benchmark_results(backend: str, mean_seconds: float, seed: int) -> bytes:
    """One run's ``benchmark.py --output-json`` file (seeded run-to-run noise of about 1%)."""
    rng = random.Random(seed)
    rows = []
    for index, spec in enumerate(BENCHMARK_SPECS):
        mean = mean_seconds * (1 + index) * rng.lognormvariate(0, 0.01)
        rows.append(
            {
                "config": {"backend": backend, "batch_spec": spec},
                "mean_time": mean,
                "std_time": mean * 0.01,
                "min_time": mean * 0.98,
                "max_time": mean * 1.02,
                "throughput_tokens_per_sec": 1.0 / mean,
                "error": None,
            }
        )
    return json.dumps(rows).encode()


DEMO_GPU = (
    "name, uuid, driver_version, clocks.current.sm [MHz], clocks.current.memory [MHz], "
    "temperature.gpu\nNVIDIA H200, GPU-3f81f7ad-710f-44f4-328d-73a7754145b0, 580.159.04, "
    "1980 MHz, 3201 MHz, 37\n"
)


def benchmark_job_files(env: dict, head_slowdown: float) -> dict[str, bytes]:
    """What a ``prbot bench run`` job uploads: ``base/`` and ``head/`` with one results file
    per round and the GPU's machine.csv; a ``backends`` job times the incumbent as base."""
    backend = (env.get("PRBOT_BENCHMARK_BACKENDS") or "FLASH_ATTN").split(",")[0]
    against = (env.get("PRBOT_BENCHMARK_AGAINST") or "").split(",")[0]
    backends_job = env.get("PRBOT_BENCHMARK_COMPARE") == "backends"
    files = {f"{side}/machine.csv": DEMO_GPU.encode() for side in ("base", "head")}
    for round_number in range(1, int(env["PRBOT_BENCHMARK_RUNS"]) + 1):
        if against or not backends_job:  # a new backend with no incumbent has no base side
            files[f"base/run-{round_number}.json"] = benchmark_results(
                against or backend, 1.0e-3, 1000 + round_number
            )
        files[f"head/run-{round_number}.json"] = benchmark_results(
            backend, 1.0e-3 * head_slowdown, round_number
        )
    return files


def finish_gpu_jobs(stack: LocalStack, *, head_slowdown: float = 1.0, state: str = "passed") -> int:
    """Finish every job of every build the local Buildkite holds, as its agents would: each
    benchmark job uploads both sides' runs (``PRBOT_BENCHMARK_RUNS`` rounds), the head's
    ``head_slowdown`` times the base's. Each finish sends its signed webhooks; returns how
    many jobs finished."""
    bk = stack.buildkite
    if bk is None:
        raise RuntimeError("the stack has no local Buildkite")
    finished = 0
    with bk.lock:
        builds = list(bk.builds.values())
    for build in builds:
        env = build.body.get("env") or {}
        for job in list(build.jobs):
            if job.state != "scheduled":
                continue
            artifacts = {}
            if "PRBOT_BENCHMARK_RUNS" in env:
                artifacts = benchmark_job_files(env, head_slowdown)
            bk.finish_job(build.number, job.step_key, state, artifacts=artifacts)
            finished += 1
    return finished
