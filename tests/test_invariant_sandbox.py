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
