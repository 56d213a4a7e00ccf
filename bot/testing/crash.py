"""A crash run: a real ``prbot serve`` (its intake and supervised workers) killed with SIGKILL
at random moments while the local GitHub test server sends it a burst of signed deliveries,
restarted each time. Shared by tests/test_reliability_crash.py (small) and
benchmarks/crash_bench.py (1,000 deliveries over 200 PRs, two workers on PostgreSQL).

What it measures is what a maintainer trusts: every delivery prbot acknowledged is stored
and processed (0 lost), each PR ends with exactly one report comment for its current head
(0 doubled), each ``/recheck`` gets one 👀; deliveries sent while prbot was down are
redelivered by its repair job (bot/repair/redeliver.py).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import sqlalchemy as sa

from bot.repair.redeliver import FAILURE_CHECK
from bot.report.render import MARKER
from bot.store.db import make_engine
from bot.store.schema import jobs, reports, utcnow
from bot.testing.github_server import FakeGitHub

REPO = "acme/widgets"
INSTALLATION_ID = 1
SECRET = "crash-run-webhook-secret"
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class CrashFigures:
    sent: int = 0
    acknowledged: int = 0
    refused_or_down: int = 0
    redelivered: int = 0
    stored: int = 0
    lost: int = 0  # acknowledged but not stored
    unrepaired: int = 0  # never acknowledged and never stored, even after repair
    kills: int = 0
    prs: int = 0
    comments_per_pr: Counter = field(default_factory=Counter)  # comments -> how many PRs
    stale_prs: int = 0  # PRs whose one comment is not for the current head
    doubled_reactions: int = 0
    doubled_check_runs: int = 0
    faults: dict = field(default_factory=dict)  # GitHub faults injected, by kind
    dead_jobs: int = 0  # jobs that used up their attempts (`prbot queue retry` revives them)
    dead_by_kind: dict = field(default_factory=dict)  # those dead jobs, by job kind
    # PRs whose one comment is the repair's "could not check this head" (bot/repair/redeliver.py)
    failure_reports: int = 0
    most_tries: int = 0  # the most requests any one (method, REST path) got
    burst_seconds: float = 0.0  # set-up and the burst, kills and restarts included
    seconds: float = 0.0

    @property
    def doubled_comments(self) -> int:
        return sum((count - 1) * prs for count, prs in self.comments_per_pr.items() if count > 1)


class ServeUnderTest:
    """``prbot serve`` on a fixed port; ``kill()`` is SIGKILL, ``start()`` brings it back."""

    def __init__(self, root: Path, env: dict[str, str], workers: int) -> None:
        self.root = root
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.workers = workers
        self.process: subprocess.Popen | None = None
        self.log = root / "serve.log"

    def start(self, timeout: float = 60.0) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bot", "serve", "--host", "127.0.0.1"]
                + ["--port", str(self.port), "--workers", str(self.workers)],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("serve did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


class CrashRun:
    def __init__(
        self,
        root: Path,
        *,
        prs: int,
        deliveries: int,
        kills: int,
        workers: int = 1,
        database_url: str | None = None,
        seed: int = 0,
        settle_timeout: float = 300.0,
        fault_rate: float = 0.0,
    ) -> None:
        self.root = Path(root)
        self.prs = prs
        self.deliveries = max(deliveries, prs)
        self.kills = kills
        self.workers = workers
        self.database_url = database_url or f"sqlite:///{self.root / 'prbot.sqlite'}"
        self.random = random.Random(seed)
        self.settle_timeout = settle_timeout
        # GitHub faults on this share of REST calls (bot/testing/chaos.py), slow answers
        # included: the client then waits PRBOT_GITHUB_TIMEOUT=2 s.
        self.fault_rate = fault_rate
        self.seed = seed
        self.comments: list[int] = []  # /recheck comment ids

    def run(self) -> CrashFigures:
        self.root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        gh = FakeGitHub(root=self.root / "github").start()
        try:
            return self._run(gh, started)
        finally:
            gh.stop()

    def _environment(self, gh: FakeGitHub) -> dict[str, str]:
        key = self.root / "app.pem"
        key.write_text(gh.private_key_pem)
        key.chmod(0o600)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(self.root)),
            "PRBOT_WEBHOOK_SECRET": SECRET,
            "PRBOT_APP_ID": str(gh.app_id),
            "PRBOT_PRIVATE_KEY_PATH": str(key),
            "PRBOT_GITHUB_API_URL": gh.url,
            "PRBOT_DATABASE_URL": self.database_url,
            "PRBOT_DATA_DIR": str(self.root / "data"),
            "PRBOT_LEASE_SECONDS": "3",
            "PRBOT_POLL_SECONDS": "0.05",
            "PRBOT_REPAIR_INTERVAL": "3",
            "PRBOT_GITHUB_REQUEST_INTERVAL": "0",
            "PRBOT_GITHUB_WRITE_INTERVAL": "0",
            "PRBOT_LOG_LEVEL": "WARNING",
            "PRBOT_GITHUB_TIMEOUT": "2" if self.fault_rate else "30",
        }

    def _plan(self, gh: FakeGitHub) -> list[tuple[str, int]]:
        gh.add_installation(INSTALLATION_ID, "acme")
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"core.py": "x = 0\n"})
        numbers = []
        for index in range(self.prs):
            gh.commit(REPO, f"b{index}", {f"m{index}.py": "y = 0\n"})
            pull = gh.open_pull_request(REPO, head_branch=f"b{index}", title=f"M{index}")
            numbers.append(pull["number"])
        plan = [("opened", n) for n in numbers]
        for _ in range(self.deliveries - len(plan)):
            kind = self.random.choice(["synchronize", "synchronize", "recheck"])
            plan.append((kind, self.random.choice(numbers)))
        return plan

    def _send(self, gh: FakeGitHub, kind: str, number: int) -> None:
        if kind == "opened":
            gh.send_webhook("pull_request", gh.pull_request_event(REPO, number, "opened"))
        elif kind == "synchronize":
            gh.push(REPO, number, {f"m{number}.py": f"y = {self.random.random()!r}\n"})
            gh.send_webhook("pull_request", gh.pull_request_event(REPO, number, "synchronize"))
        else:
            author = gh.repos[REPO].pulls[number].author
            comment = gh.add_user_comment(REPO, number, author, "/recheck")
            self.comments.append(comment["id"])
            gh.send_webhook("issue_comment", gh.issue_comment_event(REPO, number, comment))

    def _run(self, gh: FakeGitHub, started: float) -> CrashFigures:
        figures = CrashFigures(prs=self.prs)
        plan = self._plan(gh)
        serve = ServeUnderTest(self.root, self._environment(gh), self.workers)
        gh.configure_hook(f"{serve.url}/webhooks/github", SECRET)
        if self.fault_rate:
            from bot.testing.chaos import FAULTS, SLOW

            chaos = gh.chaos(self.fault_rate, self.seed, (*FAULTS, SLOW), slow_seconds=3)
        serve.start()
        kill_at = set(self.random.sample(range(1, len(plan)), min(self.kills, len(plan) - 1)))
        done = threading.Event()

        def killer() -> None:
            # Kills land mid-burst, with deliveries arriving while the service is down.
            for index in sorted(kill_at):
                while len(sent) < index and not done.is_set():
                    time.sleep(0.005)
                time.sleep(self.random.random() * 0.05)
                serve.kill()
                figures.kills += 1
                time.sleep(self.random.random() * 0.5)
                serve.start()

        sent: list[int] = []
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        try:
            for index, (kind, number) in enumerate(plan):
                self._send(gh, kind, number)
                sent.append(index)
            done.set()
            thread.join(timeout=120)
            figures.burst_seconds = time.monotonic() - started
            self._settle(gh, serve)
        finally:
            done.set()
            serve.stop()
            if self.fault_rate:
                figures.faults = dict(chaos.injected)
                gh.chaos(0, 0)
        self._count(gh, figures)
        figures.seconds = time.monotonic() - started
        return figures

    def _current(self, gh: FakeGitHub) -> bool:
        with gh.lock:
            repo = gh.repos[REPO]
            heads = {n: p.head_sha for n, p in repo.pulls.items()}
            bodies = [(c.number, c.body) for c in repo.comments.values() if c.is_bot]
        reported = {n for n, body in bodies if MARKER in body and f"prbot:head={heads[n]}" in body}
        return len(reported) == len(heads)

    def _settle(self, gh: FakeGitHub, serve: ServeUnderTest) -> None:
        engine = make_engine(self.database_url)
        deadline = time.monotonic() + self.settle_timeout
        try:
            while time.monotonic() < deadline:
                gh.hook.settle(1)
                with engine.connect() as connection:
                    # Periodic jobs (reconcile, repair) wait hours or minutes ahead: not busy.
                    busy = connection.execute(
                        sa.select(sa.func.count()).where(
                            jobs.c.kind != "repair_deliveries",
                            sa.or_(
                                jobs.c.state == "leased",
                                sa.and_(jobs.c.state == "queued", jobs.c.run_after <= utcnow()),
                            ),
                        )
                    ).scalar_one()
                if busy == 0 and self._current(gh):
                    return
                time.sleep(0.2)
        finally:
            engine.dispose()

    def _count(self, gh: FakeGitHub, figures: CrashFigures) -> None:
        attempts = gh.hook_deliveries()
        originals = [d for d in attempts if not d.redelivery]
        figures.sent = len(originals)
        figures.redelivered = len(attempts) - len(originals)
        acknowledged = {d.guid for d in attempts if 200 <= d.status_code < 300}
        figures.acknowledged = len({d.guid for d in originals if 200 <= d.status_code < 300})
        figures.refused_or_down = figures.sent - figures.acknowledged
        engine = make_engine(self.database_url)
        with engine.connect() as connection:
            stored = {row[0] for row in connection.execute(sa.text("SELECT guid FROM deliveries"))}
            dead = dict(
                connection.execute(
                    sa.select(jobs.c.kind, sa.func.count())
                    .where(jobs.c.state == "dead")
                    .group_by(jobs.c.kind)
                ).all()
            )
            failed = connection.execute(
                sa.select(reports.c.number, reports.c.head_sha, reports.c.report)
            ).all()
        engine.dispose()
        figures.stored = len(stored)
        figures.dead_jobs = sum(dead.values())
        figures.dead_by_kind = dead
        figures.lost = len(acknowledged - stored)
        figures.unrepaired = len({d.guid for d in originals} - stored)
        with gh.lock:
            repo = gh.repos[REPO]
            counts = Counter(
                c.number for c in repo.comments.values() if c.is_bot and MARKER in c.body
            )
            heads = {n: p.head_sha for n, p in repo.pulls.items()}
            latest = {
                c.number: c.body
                for c in sorted(repo.comments.values(), key=lambda c: c.id)
                if c.is_bot and MARKER in c.body
            }
            runs = Counter(r.head_sha for r in repo.check_runs.values())
            eyes = Counter(r.comment_id for r in repo.reactions if r.content == "eyes")
        figures.comments_per_pr = Counter(counts.get(n, 0) for n in heads)
        figures.failure_reports = sum(
            1
            for number, head, report in failed
            if heads.get(number) == head
            and any(s.get("check") == FAILURE_CHECK for s in report.get("sections", []))
        )
        figures.stale_prs = sum(
            1 for n, head in heads.items() if f"prbot:head={head}" not in latest.get(n, "")
        )
        figures.doubled_check_runs = sum(c - 1 for c in runs.values() if c > 1)
        figures.doubled_reactions = sum(c - 1 for c in eyes.values() if c > 1)
        rest = Counter((c.method, c.path) for c in gh.calls if ".git" not in c.path)
        figures.most_tries = max(rest.values(), default=0)
