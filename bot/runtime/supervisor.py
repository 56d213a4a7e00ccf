"""``prbot serve``'s worker processes: started, watched, restarted when one dies, stopped.

The intake keeps its event loop (and its GIL) to itself; the pipeline runs in separate
``prbot worker`` processes, each under an address-space limit (``PRBOT_WORKER_MEMORY_MB``),
so one PR that takes gigabytes or crashes the interpreter costs a worker restart and a
retried job (its lease expires), never the intake.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# A worker that dies again within this long after its start waits before the next restart,
# doubling up to the cap, so a worker that cannot start does not spin.
HEALTHY_SECONDS = 30.0
FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
POLL_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1


def apply_memory_limit(megabytes: int) -> None:
    """Cap this process's address space (RLIMIT_AS soft limit) at ``megabytes``; 0: none.

    Past it an allocation raises MemoryError in Python, which a check turns into its
    ``error`` section and the worker loop into a retried job. Only the soft limit is set,
    so sandboxed children can still set their own (bot/local/sandbox.py).
    """
    if megabytes <= 0:
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = megabytes * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


SUPERVISED_ENV = "PRBOT_SUPERVISED_BY"
# How much lower than the intake a supervised worker (and everything it runs: git, uv,
# generators) is scheduled. The intake must answer GitHub within seconds under any load; a
# report can wait. With a busy worker on the same cores, the intake then gets the CPU first.
WORKER_NICENESS = 10


def lower_priority_if_supervised(increment: int = WORKER_NICENESS) -> int:
    """In a worker started by ``prbot serve``: be nicer than the intake; returns the niceness."""
    if not os.environ.get(SUPERVISED_ENV):
        return os.nice(0)
    try:
        return os.nice(increment)
    except OSError:  # a platform or container that forbids it: run at the same priority
        return os.nice(0)


def die_with_supervisor() -> None:
    """In a supervised worker: have the kernel SIGTERM us if serve dies without stopping us.

    Done by the worker itself at startup (not in a preexec hook, which is unsafe in a
    threaded parent); the parent-pid check covers a supervisor that died before it ran.
    """
    parent = os.environ.get(SUPERVISED_ENV)
    if not parent:
        return
    with contextlib.suppress(Exception):  # Linux only; elsewhere the stop() path remains
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if str(os.getppid()) != parent:
        os.kill(os.getpid(), signal.SIGTERM)


@dataclass
class _Slot:
    index: int
    process: subprocess.Popen | None = None
    started: float = 0.0
    backoff: float = 0.0
    restart_at: float = 0.0
    restarts: int = 0


@dataclass
class WorkerSupervisor:
    """Keeps ``count`` processes of ``argv`` alive until :meth:`stop`."""

    argv: Sequence[str]
    count: int = 1
    env: Mapping[str, str] | None = None
    on_start: Callable[[int, int], None] | None = None  # (slot, pid)
    _slots: list[_Slot] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> WorkerSupervisor:
        self._slots = [_Slot(index) for index in range(max(self.count, 1))]
        for slot in self._slots:
            self._spawn(slot)
        self._thread = threading.Thread(target=self._watch, name="prbot-supervisor", daemon=True)
        self._thread.start()
        return self

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [s.process.pid for s in self._slots if s.process and s.process.poll() is None]

    def restarts(self) -> int:
        return sum(slot.restarts for slot in self._slots)

    def _spawn(self, slot: _Slot) -> None:
        process = subprocess.Popen(
            list(self.argv),
            env=dict(self.env) if self.env is not None else None,
            stdin=subprocess.DEVNULL,
        )
        with self._lock:
            slot.process = process
            slot.started = time.monotonic()
        log.info("worker %d started (pid %d)", slot.index, process.pid)
        if self.on_start is not None:
            self.on_start(slot.index, process.pid)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            now = time.monotonic()
            for slot in self._slots:
                process = slot.process
                if process is None:
                    if now >= slot.restart_at and not self._stop.is_set():
                        slot.restarts += 1
                        try:
                            self._spawn(slot)
                        except OSError as exc:  # fork or exec failed (memory, fd limits)
                            log.error("worker %d could not start: %s", slot.index, exc)
                            slot.backoff = min(
                                max(slot.backoff * 2, FIRST_BACKOFF_SECONDS), MAX_BACKOFF_SECONDS
                            )
                            slot.restart_at = now + slot.backoff
                    continue
                code = process.poll()
                if code is None:
                    if now - slot.started > HEALTHY_SECONDS:
                        slot.backoff = 0.0
                    continue
                log.error(
                    "worker %d (pid %d) exited with %s; restarting",
                    slot.index,
                    process.pid,
                    _describe_exit(code),
                )
                quick = now - slot.started < HEALTHY_SECONDS
                slot.backoff = (
                    min(max(slot.backoff * 2, FIRST_BACKOFF_SECONDS), MAX_BACKOFF_SECONDS)
                    if quick
                    else 0.0
                )
                with self._lock:
                    slot.process = None
                slot.restart_at = now + slot.backoff

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM every worker (each finishes its job), SIGKILL those still alive after
        ``timeout``; a killed worker's job is retried once its lease expires."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        processes = [slot.process for slot in self._slots if slot.process is not None]
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in processes:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


def worker_command(*, dry_run: bool) -> list[str]:
    """The argv of one ``prbot worker`` process, with this interpreter."""
    return [sys.executable, "-m", "bot", "worker", *(["--dry-run"] if dry_run else [])]


def worker_environment(metrics_dir: str) -> dict[str, str]:
    """The workers' environment: prbot's own (they are prbot), plus where to write metrics."""
    return {**os.environ, "PROMETHEUS_MULTIPROC_DIR": metrics_dir, SUPERVISED_ENV: str(os.getpid())}
