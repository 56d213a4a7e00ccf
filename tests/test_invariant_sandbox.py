"""A timed-out sandbox kills the tool's whole process group, not just the process it started."""

from __future__ import annotations

import os
import signal
import sys
import uuid

from sandbox_helpers import processes_named

from bot.cli.demo_stack import wait_for
from bot.local.sandbox import SandboxRunner

# The tool forks a grandchild that outlives it unless its group is killed; the grandchild
# writes to /dev/null, so the sandbox's pipes do not wait for it. It is found by the marker
# in its argv: in the sandbox's PID namespace its own pid means nothing outside.
FORKING_TOOL = """
import os, sys, time
pid = os.fork()
if pid == 0:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.execvp("sleep", [sys.argv[2], "120"])
with open(sys.argv[1], "w") as handle:
    handle.write("started")
time.sleep(120)
"""


def test_a_timed_out_sandbox_kills_the_whole_process_group(tmp_path):
    started = tmp_path / "started"
    marker = f"prbot-grandchild-{uuid.uuid4().hex}"
    # The timeout only has to outlast the interpreter's start on a busy machine.
    result = SandboxRunner().run(
        [sys.executable, "-c", FORKING_TOOL, str(started), marker], cwd=tmp_path, timeout=5
    )
    assert result.timed_out and result.returncode is None
    assert started.exists(), f"the tool did not start within the timeout: {result.stderr}"
    try:
        # SIGKILL is asynchronous; give the kernel a bounded moment to finish the group.
        wait_for(lambda: not processes_named(marker), timeout=10, what="the grandchild to die")
    finally:
        for pid in processes_named(marker):
            os.kill(pid, signal.SIGKILL)


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
