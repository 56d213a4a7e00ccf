"""Running external commands (uv, repository generators) with nothing secret around.

The child gets a scrubbed environment (no tokens, no prbot settings), its own session so a
timeout kills the whole process group, and CPU-time, memory and file-size limits. PR code
run through here never sees the App's key, the webhook secret or an installation token.
"""

from __future__ import annotations

import os
import pwd
import resource
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.local.childenv import allowlisted_environment


@dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int | None  # None when killed by the timeout
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


@dataclass
class SandboxRunner:
    """Runs commands with limits. One instance is shared by all checks of a run."""

    timeout: float = 120.0
    cpu_seconds: int = 300
    memory_bytes: int = 4 * 1024**3
    file_bytes: int = 1024**3
    extra_env: Mapping[str, str] = field(default_factory=dict)
    invocations: int = 0  # how many commands ran, for benchmarks and tests
    # An unprivileged account to run children as (prbot must run as root for this). Same-user
    # children could read prbot's key file and, through /proc, its memory; another user cannot.
    user: str | None = None

    def identity(self) -> tuple[int, int] | None:
        """(uid, gid) children run as, or None to run as prbot itself."""
        if not self.user or os.geteuid() != 0:
            return None
        entry = pwd.getpwnam(self.user)
        return entry.pw_uid, entry.pw_gid

    def hand_over(self, paths: list[Path], identity: tuple[int, int]) -> None:
        """Give the child's working tree (and directories named in its env) to its user."""
        uid, gid = identity
        for root in paths:
            if not root.is_dir():
                continue
            os.chown(root, uid, gid)
            for parent, dirs, files in os.walk(root):
                for name in dirs + files:
                    os.chown(os.path.join(parent, name), uid, gid, follow_symlinks=False)

    def environment(self, home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The allowlist (bot.local.childenv), HOME in the work tree, then the caller's settings."""
        return allowlisted_environment({"HOME": str(home), **self.extra_env, **(extra or {})})

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: str | None = None,
    ) -> RunResult:
        limit = timeout if timeout is not None else self.timeout
        cpu, memory, fsize = self.cpu_seconds, self.memory_bytes, self.file_bytes
        child_env = self.environment(Path(cwd), env)
        identity = self.identity()
        if identity is not None:
            named = [
                Path(v)
                for k, v in (env or {}).items()
                if v.startswith("/") and k.endswith(("_DIR", "_CACHE", "HOME"))
            ]
            self.hand_over([Path(cwd), *named], identity)

        def limit_child() -> None:  # runs in the child between fork and exec
            if identity is not None:
                os.setgroups([])
                os.setgid(identity[1])
                os.setuid(identity[0])
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        self.invocations += 1
        started = time.monotonic()
        proc = subprocess.Popen(
            list(argv),
            cwd=str(cwd),
            env=child_env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            preexec_fn=limit_child,
        )
        try:
            out, err = proc.communicate(stdin, timeout=limit)
            return RunResult(tuple(argv), proc.returncode, out, err, time.monotonic() - started)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return RunResult(
                tuple(argv), None, out or "", err or "", time.monotonic() - started, timed_out=True
            )
