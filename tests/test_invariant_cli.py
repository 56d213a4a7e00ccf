"""Commands as a user runs them, as child processes too: `prbot rules`, `serve` and `worker`.

The child processes are measured by coverage's subprocess hook when the suite runs with
``--cov`` (see pyproject.toml), so ``bot/cli/*`` counts in the floor.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading

import httpx

from bot.cli import main
from bot.cli.replay import send

RULES_OK = "extends: vllm\ncommands:\n  recheck:\n    allow: [author, admin]\n"
RULES_BAD = "checks:\n  changed_files:\n    areas: 12\n"


def _prbot(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_rules_schema_prints_the_json_schema(capsys):
    assert main(["rules", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"checks", "commands", "trust"} <= set(schema["properties"])


def test_rules_validate_accepts_a_valid_file(tmp_path, capsys):
    path = tmp_path / "prbot.yml"
    path.write_text(RULES_OK)
    assert main(["rules", "validate", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"{path}: valid"


def test_rules_validate_names_file_line_and_field_in_one_line(tmp_path):
    path = tmp_path / "prbot.yml"
    path.write_text(RULES_BAD)
    result = _prbot("rules", "validate", str(path))
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"prbot: error: {path}:3") and "checks.changed_files.areas" in line


def test_rules_validate_of_a_missing_file_is_one_line(tmp_path, capsys):
    missing = tmp_path / "nope.yml"
    assert main(["rules", "validate", str(missing)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert str(missing) in line and "cannot read" in line


def _service_env(tmp_path) -> dict[str, str]:
    # The parent's environment (coverage's hook included), without any prbot settings of its own.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRBOT_")}
    env.update(
        {
            "PRBOT_WEBHOOK_SECRET": "serve-secret-0123456789",
            "PRBOT_DATA_DIR": str(tmp_path / "data"),
            "PRBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'prbot.sqlite'}",
            "PRBOT_POLL_SECONDS": "0.05",
        }
    )
    return env


def _start(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, queue.Queue]:
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return process, lines


def _wait_line(lines: queue.Queue, pattern: str, seen: list[str]) -> re.Match:
    while True:
        line = lines.get(timeout=60)
        if line is None:
            raise AssertionError("the process ended early:\n" + "".join(seen))
        seen.append(line)
        if match := re.search(pattern, line):
            return match


def _stop(process: subprocess.Popen, sig: int) -> int:
    try:
        process.send_signal(sig)
        return process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_serve_answers_webhooks_and_stops_cleanly_on_sigint(tmp_path):
    process, lines = _start(
        ["serve", "--host", "127.0.0.1", "--port", "0", "--dry-run"], _service_env(tmp_path)
    )
    seen: list[str] = []
    try:
        url = _wait_line(lines, r"running on (http://127\.0\.0\.1:\d+)", seen).group(1)
        assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200
        assert httpx.get(f"{url}/readyz", timeout=30).status_code == 200
        ping = send(f"{url}/webhooks/github", "ping", b'{"zen": "hi"}', "serve-secret-0123456789")
        assert ping.status_code == 200 and ping.json()["status"] == "pong"
        forged = send(f"{url}/webhooks/github", "ping", b'{"zen": "hi"}', "wrong")
        assert forged.status_code == 401
    finally:
        code = _stop(process, signal.SIGINT)
    assert code == 0, "".join(seen)
    assert any("listening on 127.0.0.1:0 (dry run)" in line for line in seen)


def test_worker_starts_and_stops_cleanly_on_sigterm(tmp_path):
    process, lines = _start(["worker", "--dry-run", "--threads", "1"], _service_env(tmp_path))
    seen: list[str] = []
    try:
        _wait_line(lines, r"worker started \(1 thread\)", seen)
    finally:
        code = _stop(process, signal.SIGTERM)
    while (line := lines.get(timeout=30)) is not None:
        seen.append(line)
    assert code == 0 and "Traceback" not in "".join(seen), "".join(seen)
