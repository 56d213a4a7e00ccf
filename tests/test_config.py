"""Settings are checked when `serve` and `worker` start: one line naming the variable, exit 2,
and nothing started (no database file, no listening socket)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import ConfigError, Settings, check_environment
from bot.testing.auth import generate_private_key_pem

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def good_env(tmp_path, monkeypatch):
    """A complete, valid environment; each test spoils one variable."""
    key = tmp_path / "app.pem"
    key.write_text(generate_private_key_pem())
    env = {
        "PRBOT_WEBHOOK_SECRET": "s3cret",
        "PRBOT_APP_ID": "12",
        "PRBOT_PRIVATE_KEY_PATH": str(key),
        "PRBOT_DATA_DIR": str(tmp_path / "data"),
        "PRBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'data' / 'prbot.sqlite'}",
        "PRBOT_GITHUB_API_URL": "http://127.0.0.1:9",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


BAD_VALUES = [
    ("PRBOT_DEFAULT_RULES", "default   # or vllm", "comment after its value"),
    ("PRBOT_WEBHOOK_SECRET", "old   # rotate soon", "comment after its value"),
    ("PRBOT_DEFAULT_RULES", "vllm2", "must be one of default, vllm"),
    ("PRBOT_WORKER_THREADS", "two", "must be a whole number"),
    ("PRBOT_WORKER_THREADS", "2.5", "must be a whole number"),
    ("PRBOT_WORKER_PROCESSES", "0", "must be at least 1"),
    ("PRBOT_LEASE_SECONDS", "nan", "finite number"),
    ("PRBOT_GITHUB_TIMEOUT", "-3", "above 0"),
    ("PRBOT_GITHUB_API_URL", "api.github.com", "http(s) URL"),
    ("PRBOT_GITHUB_API_URL", "https://ghes:99999/api/v3", "bad port"),
    ("PRBOT_DATABASE_URL", "mysql://db/prbot", "postgresql://"),
    ("PRBOT_APP_ID", "my-app", "numeric id"),
    ("PRBOT_PRIVATE_KEY_PATH", "/nonexistent/app.pem", "cannot read"),
    ("PRBOT_LOG_FORMAT", "yaml", "must be one of text, json"),
    ("PRBOT_LOG_LEVEL", "LOUD", "must be one of DEBUG"),
    ("PRBOT_SANDBOX_USER", "no-such-account-here", "no account named"),
    ("PRBOT_INTAKE_MAX_CONNECTIONS", " 500", "whitespace around"),
]


@pytest.mark.parametrize(("name", "value", "expected"), BAD_VALUES)
def test_a_bad_value_is_one_line_naming_the_variable(
    good_env, monkeypatch, capsys, name, value, expected
):
    monkeypatch.setenv(name, value)
    for command in (["serve", "--port", "0"], ["worker"]):
        assert main(command) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"prbot: error: {name}") and expected in lines[0], lines
    # Nothing was started: the database was never created.
    assert not Path(good_env["PRBOT_DATA_DIR"], "prbot.sqlite").exists()


def test_a_secret_is_never_echoed_in_the_error(good_env, monkeypatch, capsys):
    monkeypatch.setenv("PRBOT_WEBHOOK_SECRET", "hunter2-value   # note")
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert "PRBOT_WEBHOOK_SECRET" in err and "hunter2" not in err


def test_a_key_file_that_is_not_a_key_is_refused(good_env, tmp_path, monkeypatch, capsys):
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("-----BEGIN RSA PRIVATE KEY-----\nnot base64\n-----END RSA PRIVATE KEY-----\n")
    monkeypatch.setenv("PRBOT_PRIVATE_KEY_PATH", str(bogus))
    assert main(["worker"]) == 2
    assert "PRBOT_PRIVATE_KEY_PATH: the file is not a PEM private key" in capsys.readouterr().err


def test_a_non_rsa_key_is_refused(good_env, tmp_path, monkeypatch, capsys):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    key = tmp_path / "ec.pem"
    key.write_text(pem)
    monkeypatch.setenv("PRBOT_PRIVATE_KEY_PATH", str(key))
    assert main(["worker"]) == 2
    assert "GitHub App keys are RSA" in capsys.readouterr().err


def test_an_unwritable_data_dir_is_refused(good_env, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PRBOT_DATA_DIR", str(blocker / "sub"))
    monkeypatch.delenv("PRBOT_DATABASE_URL")
    assert main(["worker"]) == 2
    assert "PRBOT_DATA_DIR: cannot create" in capsys.readouterr().err


def test_an_unreachable_database_is_one_line(good_env, monkeypatch, capsys):
    monkeypatch.setenv("PRBOT_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")
    assert main(["worker"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prbot: error: PRBOT_DATABASE_URL"), lines


def test_good_values_are_parsed(good_env, monkeypatch):
    monkeypatch.setenv("PRBOT_DEFAULT_RULES", "vllm")
    monkeypatch.setenv("PRBOT_WORKER_THREADS", "4")
    monkeypatch.setenv("PRBOT_LOG_LEVEL", "info")
    monkeypatch.setenv("PRBOT_LOG_FORMAT", "JSON")
    monkeypatch.setenv("PRBOT_GITHUB_API_URL", "https://ghes.example.com/api/v3/")
    monkeypatch.setenv("PRBOT_WEBHOOK_SECRET", "new,old")
    settings = Settings.from_env()
    assert settings.default_rules == "vllm" and settings.worker_threads == 4
    assert (settings.log_level, settings.log_format) == ("INFO", "json")
    assert settings.github_api_url == "https://ghes.example.com/api/v3"
    assert settings.webhook_secrets == ("new", "old")
    settings.check_startup(github=True)


def test_empty_values_mean_the_default():
    # compose passes `KEY=` through as an empty string.
    check_environment({"PRBOT_LOG_LEVEL": "", "OTHER": "x  # fine, not ours"})
    with pytest.raises(ConfigError, match="PRBOT_X"):
        check_environment({"PRBOT_X": "1 #2"})


def test_the_env_example_as_systemd_reads_it_starts_clean(tmp_path):
    """deploy/prbot.env.example parsed as systemd does (everything after '=' is the value)."""
    from bot.cli.setup import read_env_file

    values = read_env_file(ROOT / "deploy" / "prbot.env.example")
    check_environment(values)
    # And the unsafe shape the issue reports fails, through the real executable.
    env = {
        "PATH": "/usr/bin:/bin",
        "PRBOT_DATA_DIR": str(tmp_path),
        "PRBOT_WEBHOOK_SECRET": "old   # previous secret",
    }
    result = subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--no-worker", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "prbot: error: PRBOT_WEBHOOK_SECRET has a comment after its value (value hidden); env "
        "files keep it as part of the value: put comments on lines of their own"
    ]
    assert not (tmp_path / "prbot.sqlite").exists()


def test_a_dry_run_worker_needs_no_app_settings(tmp_path):
    settings = Settings(dry_run=True, data_dir=tmp_path)
    settings.check_startup(github=True, intake=False)
    with pytest.raises(ConfigError, match="PRBOT_WEBHOOK_SECRET"):
        settings.check_startup(github=False, intake=True)
