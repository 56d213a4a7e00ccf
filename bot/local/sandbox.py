"""Running external commands (uv, repository generators) with nothing secret around.

The child gets a scrubbed environment (no tokens, no prbot settings), CPU-time, memory and
file-size limits, and its own session; whatever it started is killed when it returns, not
only on a timeout. Where Linux lets an unprivileged process make namespaces (``unshare``),
the child also runs in PID, mount and user namespaces of its own: it sees only its own
processes in ``/proc`` (never prbot's memory or environment), the paths prbot names as
secret (the App key, the database, the mirrors) are empty over it, its namespace dies with
it (a daemon cannot outlive the run), and a generator gets no network, loopback included.
As root with ``PRBOT_SANDBOX_USER`` it runs as that account as well. Without either, the
child runs as prbot's own user and could read what prbot can: :attr:`SandboxRunner.isolated`
says so, and a PR's changed generator is then not run (bot/gendocs/generator.py).
"""

from __future__ import annotations

import errno
import functools
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.local.childenv import allowlisted_environment

# The namespace's first process: mounts what prbot names as secret away (an empty tmpfs over
# a directory, /dev/null over a file) and prbot's own code read-only ("ro:"); a path that
# stays readable (or writable) after a failed mount stops the run with exit 125 rather than
# run the command beside it. It then runs the command and passes
# its status on. It does not exec the command: a namespace's first process ignores signals
# it has no handler for, and util-linux's unshare cannot pass a SIGKILL on (an RLIMIT_CPU
# kill came back as exit 1), so a death by signal is said on stderr and turned back into a
# negative return code here. The command itself runs one user and mount namespace further
# in: the mounts above are then locked for it (a namespace's own root could otherwise simply
# unmount them and read the key underneath).
_HIDE_AND_EXEC = r"""
unshare_path=$1
shift
while [ "$1" != "--" ]; do
  case "$1" in
  ro:*)
    p=${1#ro:}
    { mount --bind "$p" "$p" && mount -o remount,bind,ro "$p" "$p"; } 2>/dev/null ||
      { [ -w "$p" ] && exit 125; }
    ;;
  *)
    if [ -d "$1" ]; then
      mount -t tmpfs -o size=4k,mode=000 prbot-hidden "$1" 2>/dev/null ||
        { [ -r "$1" ] && exit 125; }
    elif [ -e "$1" ]; then
      mount --bind /dev/null "$1" 2>/dev/null || { [ -r "$1" ] && exit 125; }
    fi
    ;;
  esac
  shift
done
shift
"$unshare_path" --user --map-root-user --mount -- "$@"
status=$?
[ "$status" -gt 128 ] && echo "prbot-sandbox: signal $((status - 128))" >&2
exit "$status"
"""
ISOLATION_REFUSED = 125
_UNSHARE = (
    "--user",
    "--map-root-user",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount",
    "--mount-proc",
)


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


def _as(identity: tuple[int, int] | None) -> None:
    if identity is not None:
        os.setgroups([])
        os.setgid(identity[1])
        os.setuid(identity[0])


@functools.cache
def namespaces_available(identity: tuple[int, int] | None = None) -> bool:
    """Whether ``unshare`` can give a child of this identity its own user, PID and mount
    namespaces here (kernels and container runtimes may forbid it)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    try:
        done = subprocess.run(
            [unshare, *_UNSHARE, "--net", "/bin/sh", "-c", _HIDE_AND_EXEC, "sh", unshare, "--"]
            + ["true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
            cwd="/",
            env=allowlisted_environment({}),
            preexec_fn=lambda: _as(identity),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


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
    # Paths a child must not read (the App key, the database, the mirrors), asked for at each
    # run since files such as a WAL come and go; mounted over where namespaces are available.
    secret_paths: Callable[[], Sequence[Path]] = lambda: ()
    # Off: never use namespaces (a test of the same-user path).
    use_namespaces: bool = True

    def identity(self) -> tuple[int, int] | None:
        """(uid, gid) children run as, or None to run as prbot itself."""
        if not self.user or os.geteuid() != 0:
            return None
        entry = pwd.getpwnam(self.user)
        return entry.pw_uid, entry.pw_gid

    @property
    def namespaced(self) -> bool:
        return self.use_namespaces and namespaces_available(self.identity())

    @property
    def isolated(self) -> bool:
        """Whether a child is kept from what prbot's own user can read (its key, database and
        /proc): by namespaces, or by running as another account."""
        return self.namespaced or self.identity() is not None

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

    def _wrapped(self, argv: Sequence[str], *, cwd: Path, network: bool) -> list[str]:
        if not self.namespaced:
            return list(argv)
        unshare = shutil.which("unshare") or "unshare"
        hidden = [str(p) for p in self.secret_paths() if os.path.lexists(p)]
        # prbot's own code and interpreter are read-only to the tool (as prbot's user it could
        # otherwise rewrite what the next worker imports), unless the tool's tree is inside.
        read_only = [
            f"ro:{p}" for p in _installation() if p.is_dir() and not Path(cwd).is_relative_to(p)
        ]
        net = [] if network else ["--net"]
        wrapper = ["/bin/sh", "-c", _HIDE_AND_EXEC, "sh", unshare, *hidden, *read_only, "--"]
        return [unshare, *_UNSHARE, *net, *wrapper, *argv]

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: str | None = None,
        network: bool = True,
    ) -> RunResult:
        """Run ``argv`` in ``cwd``; ``network=False`` (a generator) cuts it off from every
        network, loopback included, where namespaces are available."""
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
            _as(identity)
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        self.invocations += 1
        started = time.monotonic()
        command = self._wrapped(argv, cwd=Path(cwd), network=network)
        wrapped = len(command) != len(argv)
        if wrapped:
            _check_startable(argv[0], Path(cwd), child_env.get("PATH"))
        proc = subprocess.Popen(
            command,
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
        timed_out = False
        try:
            try:
                out, err = proc.communicate(stdin, timeout=limit)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_session(proc.pid)
                out, err = proc.communicate()
        finally:
            # Whatever it started (a daemon, a process holding its pipes) goes with it, on
            # every exit: in a namespace the kernel does this when its first process ends.
            _kill_session(proc.pid)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        seconds = time.monotonic() - started
        returncode = proc.returncode
        if wrapped and returncode is not None and returncode > 128:
            marker = f"prbot-sandbox: signal {returncode - 128}\n"
            if (err or "").endswith(marker):
                err, returncode = err[: -len(marker)], 128 - returncode
        if timed_out:
            return RunResult(tuple(argv), None, out or "", err or "", seconds, timed_out=True)
        return RunResult(tuple(argv), returncode, out, err, seconds)


@functools.cache
def _installation() -> tuple[Path, ...]:
    """Where prbot's code and interpreter live: its package's directory, the environment and
    the interpreter it was made from."""
    package = Path(__file__).resolve().parents[2]
    found = {package, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return tuple(sorted(p for p in found if p != Path("/")))


def _check_startable(program: str, cwd: Path, path: str | None) -> None:
    """Raise what Popen would for a program that cannot start: the namespace's shell would
    only say so in an exit status 127."""
    if "/" in program:
        where = Path(program) if program.startswith("/") else cwd / program
        startable = where.is_file() and os.access(where, os.X_OK)
    else:
        startable = shutil.which(program, path=path) is not None
    if not startable:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def _kill_session(leader: int) -> None:
    """SIGKILL every process of the child's session (it was started as a session leader):
    its process group and every group it made, which a kill of the group alone would miss."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # Fields after the name: state, ppid, pgrp, session, ...
        if int(fields[3]) == leader:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
