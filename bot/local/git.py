"""Thin adapter over the ``git`` command: read trees, diff revisions, fetch pull refs.

Everything git-shaped that prbot does goes through here, so the rest of the code reads
files and diffs as plain data.
"""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from bot.local.childenv import allowlisted_environment

# Set on every git call: no credential prompt can hang a worker, and messages are parseable.
GIT_BASE_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


class GitError(RuntimeError):
    """A git command failed; the message carries git's own stderr."""


def run_git(
    repo: Path | str,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> bytes:
    """Run git in ``repo``; its environment is the allowlist plus ``env`` (see
    bot.local.childenv)."""
    full_env = allowlisted_environment({**GIT_BASE_ENV, **(env or {})})
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args],
            input=input,
            capture_output=True,
            env=full_env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} timed out after {timeout:.0f}s") from exc
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {' '.join(args[:2])}: {message[-1] if message else 'failed'}")
    return proc.stdout


def auth_env(token: str | None) -> dict[str, str]:
    """Git config (via environment, so it never lands on disk or argv) for a bearer token."""
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def resolve(repo: Path | str, rev: str) -> str:
    return run_git(repo, ["rev-parse", "--verify", f"{rev}^{{commit}}"]).decode().strip()


class BlobTooLarge(Exception):
    """A blob over the reader's limit: skipped unread (``size`` is what git reported)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


class BlobReader:
    """Reads many blobs through one long-lived ``git cat-file --batch`` process."""

    def __init__(self, repo: Path | str) -> None:
        self._repo = str(repo)
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                ["git", "-C", self._repo, "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=allowlisted_environment(GIT_BASE_ENV),
            )
        return self._proc

    def read(self, object_name: str, *, limit: int | None = None) -> bytes | None:
        """The blob's bytes; :class:`BlobTooLarge` past ``limit``, read off the pipe in chunks."""
        if "\n" in object_name:
            return None
        with self._lock:
            proc = self._ensure()
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(object_name.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] == b"missing":
                return None
            size = int(header[2])
            if limit is not None and size > limit:
                left = size + 1  # the object and its newline, so the next answer lines up
                while left > 0:
                    chunk = proc.stdout.read(min(left, 1 << 20))
                    if not chunk:  # git went away; the next read starts a new process
                        break
                    left -= len(chunk)
                if header[1] != b"blob":
                    return None
                raise BlobTooLarge(size)
            data = proc.stdout.read(size)
            proc.stdout.read(1)  # the newline after the object
            return data if header[1] == b"blob" else None

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin:
                self._proc.stdin.close()
            self._proc.wait(timeout=5)
            self._proc = None
