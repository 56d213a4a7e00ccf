"""The service commands as a user meets them: config errors are one line, replay signs."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
from intake_helpers import ServeProcess

from bot.cli import main
from bot.cli.demo_stack import INSTALLATION_ID, WEBHOOK_SECRET, LocalStack, wait_for
from bot.store import deliveries


def _prbot(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_serve_without_app_settings_is_one_clear_line(tmp_path, monkeypatch):
    env = {
        "PATH": "/usr/bin:/bin",
        "PRBOT_DATA_DIR": str(tmp_path),
        "PRBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
    }
    result = _prbot("serve", "--port", "0", env=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "prbot: error: missing settings: PRBOT_WEBHOOK_SECRET, PRBOT_APP_ID, PRBOT_PRIVATE_KEY_PATH"
    ]


def test_serve_refuses_the_examples_placeholder_secret_in_one_line(tmp_path):
    # deploy/prbot.env.example ships "change-me"; on main `prbot serve` started with it.
    env = {
        "PATH": "/usr/bin:/bin",
        "PRBOT_DATA_DIR": str(tmp_path),
        "PRBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
        "PRBOT_WEBHOOK_SECRET": "change-me",
    }
    result = _prbot("serve", "--no-worker", "--port", "0", env=env)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("prbot: error: PRBOT_WEBHOOK_SECRET is the placeholder from")
    assert not (tmp_path / "db.sqlite").exists()


def test_intake_alone_needs_no_app_key(tmp_path):
    # The intake never calls GitHub: deploy/ runs it without the key, which only workers read.
    with ServeProcess(tmp_path, "--no-worker") as serve:
        assert httpx.get(f"{serve.url}/healthz", timeout=20).status_code == 200
        assert httpx.get(f"{serve.url}/readyz", timeout=20).status_code == 200


def test_worker_with_unreadable_key_is_one_clear_line(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "PRBOT_DATA_DIR": str(tmp_path),
        "PRBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
        "PRBOT_WEBHOOK_SECRET": "worker-test-secret-0123",
        "PRBOT_APP_ID": "1",
        "PRBOT_PRIVATE_KEY_PATH": str(tmp_path / "missing.pem"),
    }
    result = _prbot("worker", env=env)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "PRBOT_PRIVATE_KEY_PATH" in result.stderr and "Traceback" not in result.stderr


def test_replay_signs_with_the_secret_from_the_environment_or_a_file(tmp_path, capsys, monkeypatch):
    with LocalStack(tmp_path / "stack") as stack:
        stack.github.create_repo(
            "acme/widgets", installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"}
        )
        payload = tmp_path / "installation.json"
        payload.write_text(json.dumps(stack.github.installation_event(INSTALLATION_ID)))
        replay = ["replay", str(payload), "--event", "installation", "--url", stack.webhook_url]
        # During a rotation the first configured secret signs.
        monkeypatch.setenv("PRBOT_WEBHOOK_SECRET", f"{WEBHOOK_SECRET},old-secret")
        assert main(replay) == 0 and capsys.readouterr().out.startswith("202 ")
        wait_for(
            lambda: deliveries.count_deliveries(stack.service.engine) == 1, what="stored delivery"
        )
        monkeypatch.delenv("PRBOT_WEBHOOK_SECRET")
        secret_file = tmp_path / "secret"
        secret_file.write_text("wrong\n")
        # A wrong secret is refused by the server and reported with a non-zero exit.
        assert main([*replay, "--secret-file", str(secret_file)]) == 1
        assert capsys.readouterr().out.startswith("401 ")
        secret_file.write_text(WEBHOOK_SECRET + "\n")
        assert main([*replay, "--secret-file", str(secret_file), "--delivery", "d-2"]) == 0
        assert capsys.readouterr().out.startswith("202 ")


def test_replay_refuses_a_secret_on_the_command_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PRBOT_WEBHOOK_SECRET", raising=False)
    payload = tmp_path / "p.json"
    payload.write_text("{}")
    replay = ["replay", str(payload), "--event", "ping", "--url", "http://127.0.0.1:9/"]
    assert main([*replay, "--secret", "s3cret"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [
        "prbot: error: --secret is not accepted (the command line is visible to other users); "
        "set PRBOT_WEBHOOK_SECRET or pass --secret-file FILE"
    ]
    assert main(replay) == 2
    assert "set PRBOT_WEBHOOK_SECRET or pass --secret-file" in capsys.readouterr().err


def test_replay_of_a_missing_file_is_one_line(capsys, monkeypatch):
    monkeypatch.setenv("PRBOT_WEBHOOK_SECRET", "s")
    assert (
        main(["replay", "/nonexistent.json", "--event", "ping", "--url", "http://127.0.0.1:9/"])
        == 2
    )
    assert capsys.readouterr().err.strip() == (
        "prbot: error: /nonexistent.json: No such file or directory"
    )
