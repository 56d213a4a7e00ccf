"""Settings are checked when `serve` and `worker` start: one line naming the variable, exit 2,
and nothing started (no database file, no listening socket)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.runtime.settings import CiSettings, ConfigError, Settings, check_environment
from bot.testing.auth import generate_private_key_pem

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def good_env(tmp_path, monkeypatch):
    """A complete, valid environment; each test spoils one variable."""
    key = tmp_path / "app.pem"
    key.write_text(generate_private_key_pem())
    env = {
        "PRBOT_WEBHOOK_SECRET": "s3cret-0123456789",
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
    # The examples' placeholder and short secrets start nothing (issue 21, item 15).
    ("PRBOT_WEBHOOK_SECRET", "change-me", "the placeholder from the examples"),
    ("PRBOT_WEBHOOK_SECRET", "x", "too short to be a secret: 1 characters, at least 16"),
    ("PRBOT_WEBHOOK_SECRET", "a-long-new-secret-value,old", "too short to be a secret"),
    ("PRBOT_DATABASE_URL", "postgresql://prbot:change-me@127.0.0.1:9/p", "placeholder password"),
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
    monkeypatch.setenv("PRBOT_WEBHOOK_SECRET", "new-secret-0123456789,old-secret-0123456789")
    settings = Settings.from_env()
    assert settings.default_rules == "vllm" and settings.worker_threads == 4
    assert (settings.log_level, settings.log_format) == ("INFO", "json")
    assert settings.github_api_url == "https://ghes.example.com/api/v3"
    assert settings.webhook_secrets == ("new-secret-0123456789", "old-secret-0123456789")
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


CI_BAD_VALUES = [
    ("PRBOT_BUILDKITE_ORGANIZATION", "Acme Corp", "must be a Buildkite slug"),
    ("PRBOT_BUILDKITE_ORGANIZATION", "acme/../other", "must be a Buildkite slug"),
    ("PRBOT_BUILDKITE_PIPELINE", "ci?x=1", "must be a Buildkite slug"),
    ("PRBOT_BUILDKITE_PIPELINE", "gpu-ci  # nightly", "comment after its value"),
    ("PRBOT_BUILDKITE_TOKEN", "Bearer bkua_123", "without spaces"),
    ("PRBOT_BUILDKITE_TOKEN", "bkua_1,bkua_2", "one token"),
    ("PRBOT_BUILDKITE_TOKEN", "bkua_123 ", "whitespace around"),
    ("PRBOT_BUILDKITE_WEBHOOK_TOKEN", "new,,old", "empty entries"),
    ("PRBOT_BUILDKITE_WEBHOOK_TOKEN", "change-me", "the placeholder from the examples"),
    ("PRBOT_BUILDKITE_WEBHOOK_TOKEN", "bkwh-0123456789abcdef,old", "too short to be a secret"),
    ("PRBOT_BUILDKITE_API_URL", "http://buildkite.example.com", "https URL"),
    ("PRBOT_BUILDKITE_API_URL", "api.buildkite.com", "http(s) URL"),
    ("PRBOT_BUILDKITE_WEBHOOK_MAX_AGE", "0", "above 0"),
    ("PRBOT_BUILDKITE_WEBHOOK_MAX_AGE", "300000", "at most 86400"),
    ("PRBOT_BUILDKITE_WEBHOOK_MAX_AGE", "five minutes", "must be a number"),
    ("PRBOT_ACTIONS_WORKFLOW", ".github/workflows/gpu.yml", "no directory"),
    ("PRBOT_ACTIONS_WORKFLOW", "gpu.json", "workflow file name"),
    ("PRBOT_ACTIONS_WORKFLOW", "../gpu.yml", "workflow file name"),
]


@pytest.mark.parametrize(("name", "value", "expected"), CI_BAD_VALUES)
def test_a_bad_ci_value_is_one_line_naming_the_variable(
    good_env, monkeypatch, capsys, name, value, expected
):
    monkeypatch.setenv(name, value)
    assert main(["worker"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"prbot: error: {name}") and expected in lines[0], lines
    assert not Path(good_env["PRBOT_DATA_DIR"], "prbot.sqlite").exists()


BUILDKITE = {
    "PRBOT_BUILDKITE_ORGANIZATION": "acme",
    "PRBOT_BUILDKITE_PIPELINE": "gpu-ci",
    "PRBOT_BUILDKITE_TOKEN": "bkua_0123456789abcdef",
}


@pytest.mark.parametrize("left_out", sorted(BUILDKITE))
def test_buildkite_is_configured_whole_or_not_at_all(good_env, monkeypatch, capsys, left_out):
    for name, value in BUILDKITE.items():
        if name != left_out:
            monkeypatch.setenv(name, value)
    assert main(["worker"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"prbot: error: {left_out} is not set") and "together" in line


def test_a_ci_token_is_never_echoed_in_the_error(good_env, monkeypatch, capsys):
    for name in ("PRBOT_BUILDKITE_TOKEN", "PRBOT_BUILDKITE_WEBHOOK_TOKEN"):
        monkeypatch.setenv(name, "bkua_hunter2  # the CI token")
        assert main(["worker"]) == 2
        err = capsys.readouterr().err
        assert name in err and "hunter2" not in err
        monkeypatch.delenv(name)


def test_good_ci_values_are_parsed(good_env, monkeypatch):
    for name, value in BUILDKITE.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PRBOT_BUILDKITE_API_URL", "https://buildkite.internal/api/")
    monkeypatch.setenv("PRBOT_BUILDKITE_WEBHOOK_TOKEN", "new, old")
    monkeypatch.setenv("PRBOT_BUILDKITE_WEBHOOK_MAX_AGE", "120")
    monkeypatch.setenv("PRBOT_ACTIONS_WORKFLOW", "gpu_jobs.yaml")
    ci = Settings.from_env().ci
    assert (ci.buildkite_organization, ci.buildkite_pipeline) == ("acme", "gpu-ci")
    assert ci.buildkite_token == "bkua_0123456789abcdef"
    assert ci.buildkite_api_url == "https://buildkite.internal/api"
    assert ci.buildkite_webhook_tokens == ("new", "old")
    assert (ci.buildkite_webhook_max_age, ci.actions_workflow) == (120.0, "gpu_jobs.yaml")
    # A local Buildkite (the test server) may be plain http on loopback only.
    monkeypatch.setenv("PRBOT_BUILDKITE_API_URL", "http://127.0.0.1:8123")
    assert CiSettings.from_env().buildkite_api_url == "http://127.0.0.1:8123"


def test_no_ci_settings_mean_no_engine_and_the_defaults(good_env):
    ci = Settings.from_env().ci
    assert ci == CiSettings()
    assert (ci.buildkite_token, ci.buildkite_webhook_tokens) == (None, ())


def test_a_short_buildkite_api_token_is_refused(good_env, monkeypatch, capsys):
    for name, value in BUILDKITE.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PRBOT_BUILDKITE_TOKEN", "bkua_1")
    assert main(["worker"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("prbot: error: PRBOT_BUILDKITE_TOKEN is too short to be a secret")
    assert "bkua_1" not in line


def test_the_sandbox_hides_the_key_the_database_and_the_data_directory_but_uvs_cache(tmp_path):
    data = tmp_path / "data"
    for name in ("mirrors", "locks", "intake", "uv-cache"):
        (data / name).mkdir(parents=True)
    for name in ("prbot.sqlite", "prbot.sqlite-wal", "prbot.sqlite-inbox"):
        (data / name).write_text("")
    elsewhere = tmp_path / "db" / "main.sqlite"
    elsewhere.parent.mkdir()
    elsewhere.write_text("")
    (tmp_path / "db" / "main.sqlite-wal").write_text("")
    key = tmp_path / "etc" / "app.pem"
    hidden = Settings(data_dir=data, private_key_path=key).sandbox_secret_paths()
    assert set(hidden) == {
        key,
        key.with_name("prbot.env"),
        *(data / n for n in ("mirrors", "locks", "intake")),
        *(data / n for n in ("prbot.sqlite", "prbot.sqlite-wal", "prbot.sqlite-inbox")),
    }
    other = Settings(data_dir=data, database_url=f"sqlite:///{elsewhere}").sandbox_secret_paths()
    assert {elsewhere, elsewhere.with_name("main.sqlite-wal")} <= set(other)
    assert data / "uv-cache" not in other
