"""The sandbox: a scrubbed environment, limits, timeouts, and (as root) another user."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from bot.local.sandbox import SandboxRunner


def test_secrets_are_not_in_the_child_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PRBOT_WEBHOOK_SECRET", "hunter2")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    result = SandboxRunner().run(["env"], cwd=tmp_path)
    assert result.ok
    assert "hunter2" not in result.stdout and "ghs_secret" not in result.stdout
    assert f"HOME={tmp_path}" in result.stdout


def test_timeout_kills_the_whole_process_group(tmp_path):
    script = "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
    result = SandboxRunner().run([sys.executable, "-c", script], cwd=tmp_path, timeout=1)
    assert result.timed_out and not result.ok and result.returncode is None


def test_memory_limit_applies(tmp_path):
    runner = SandboxRunner(memory_bytes=256 * 1024**2)
    result = runner.run([sys.executable, "-c", "b = bytearray(1024**3)"], cwd=tmp_path)
    assert result.returncode != 0 and "MemoryError" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_children_run_as_another_user_and_cannot_read_prbots_secrets():
    work = Path(tempfile.mkdtemp(prefix="prbot-sandbox-"))  # /tmp, traversable by others
    secret = Path(tempfile.mkdtemp(prefix="prbot-key-")) / "app.pem"
    secret.write_text("-----BEGIN PRIVATE KEY-----\n")
    secret.chmod(0o600)
    try:
        runner = SandboxRunner(user="nobody")
        script = (
            "id -u; echo ok > written.txt; "
            f"for f in {secret} /proc/{os.getpid()}/environ; do "
            'if cat "$f" >/dev/null 2>&1; then echo READ "$f"; else echo denied "$f"; fi; done'
        )
        result = runner.run(["/bin/sh", "-c", script], cwd=work)
        assert result.ok, result.stderr
        lines = result.stdout.split()
        assert lines[0] == str(65534)  # nobody
        assert "READ" not in result.stdout and result.stdout.count("denied") == 2
        assert (work / "written.txt").read_text() == "ok\n"
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(secret.parent, ignore_errors=True)
