"""A timed-out sandbox kills the tool's whole process group, not just the process it started."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from bot.cli.demo_stack import wait_for
from bot.local.sandbox import SandboxRunner

# The tool forks a grandchild that outlives it unless its group is killed; the grandchild
# writes to /dev/null, so the sandbox's pipes do not wait for it.
FORKING_TOOL = """
import os, sys, time
pid = os.fork()
if pid == 0:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.execvp("sleep", ["sleep", "120"])
with open(sys.argv[1], "w") as handle:
    handle.write(str(pid))
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    """Running (a zombie is dead: only its parent's bookkeeping is left)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_timed_out_sandbox_kills_the_whole_process_group(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    # The timeout only has to outlast the interpreter's start on a busy machine.
    result = SandboxRunner().run(
        [sys.executable, "-c", FORKING_TOOL, str(pid_file)], cwd=tmp_path, timeout=5
    )
    assert result.timed_out and result.returncode is None
    assert pid_file.exists(), f"the tool did not start within the timeout: {result.stderr}"
    grandchild = int(pid_file.read_text())
    try:
        # SIGKILL is asynchronous; give the kernel a bounded moment to finish the group.
        wait_for(lambda: not _alive(grandchild), timeout=10, what="the grandchild to die")
    finally:
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_a_tool_that_spins_is_stopped_by_its_cpu_time_limit(tmp_path):
    # The wall-clock timeout is far away: only the CPU limit (SIGXCPU) can stop it first.
    runner = SandboxRunner(cpu_seconds=1)
    result = runner.run([sys.executable, "-c", "while True: pass"], cwd=tmp_path, timeout=60)
    # SIGXCPU at the soft limit; the kernel kills with SIGKILL when soft equals hard.
    assert not result.timed_out and result.returncode in (-signal.SIGXCPU, -signal.SIGKILL)


def test_a_tool_cannot_write_a_file_past_its_size_limit(tmp_path):
    runner = SandboxRunner(file_bytes=1024 * 1024)
    script = "open('big', 'wb').write(b'x' * (2 * 1024 * 1024))"
    result = runner.run([sys.executable, "-c", script], cwd=tmp_path)
    assert result.returncode != 0 and "File too large" in result.stderr
    assert (tmp_path / "big").stat().st_size == 1024 * 1024
