"""Children see an allowlisted environment: prbot's secrets never reach git or the sandbox.

Observed for real: git runs a shell alias that prints its environment, and the long-lived
``git cat-file`` reader's /proc/<pid>/environ is read back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.local.childenv import allowlisted_environment
from bot.local.git import BlobReader, run_git
from bot.local.sandbox import SandboxRunner

SECRETS = {
    "PRBOT_WEBHOOK_SECRET": "hook-secret-value",
    "PRBOT_PRIVATE_KEY_PATH": "/etc/prbot/app.pem",
    "PRBOT_DATABASE_URL": "postgresql://prbot:db-password@db/prbot",
    "GITHUB_TOKEN": "ghs_token_value",
    "GIT_SSH_COMMAND": "ssh -i /root/.ssh/deploy",  # a GIT_* that prbot did not set
}


@pytest.fixture
def secret_environment(monkeypatch):
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LC_CTYPE", "C.UTF-8")


def _assert_clean(environment_text: str) -> None:
    for key, value in SECRETS.items():
        assert key not in environment_text
        assert value not in environment_text


def test_allowlist_keeps_path_locale_and_what_prbot_sets(secret_environment):
    env = allowlisted_environment({"GIT_CONFIG_COUNT": "1"})
    assert env["PATH"] and env["LC_CTYPE"] == "C.UTF-8" and env["GIT_CONFIG_COUNT"] == "1"
    _assert_clean("\n".join(f"{k}={v}" for k, v in env.items()))


def test_a_git_child_never_sees_prbot_secrets(secret_environment, git_repo):
    git_repo.commit({"a.txt": "a\n"})
    # A repository-configured alias runs a shell with git's own environment.
    git_repo.git("config", "alias.dumpenv", "!env")
    dumped = run_git(git_repo.path, ["dumpenv"], env={"GIT_CONFIG_COUNT": "0"}).decode()
    assert "GIT_CONFIG_COUNT=0" in dumped and "PATH=" in dumped
    assert "GIT_TERMINAL_PROMPT=0" in dumped
    _assert_clean(dumped)


def test_the_blob_reader_process_never_sees_prbot_secrets(secret_environment, git_repo):
    git_repo.commit({"a.txt": "a\n"})
    reader = BlobReader(git_repo.path)
    try:
        assert reader.read("HEAD:a.txt") == b"a\n"
        assert reader._proc is not None
        environ = Path(f"/proc/{reader._proc.pid}/environ").read_bytes().decode()
    finally:
        reader.close()
    assert "PATH=" in environ
    _assert_clean(environ)


def test_a_sandboxed_tool_never_sees_prbot_secrets(secret_environment, tmp_path):
    result = SandboxRunner(timeout=20).run(["env"], cwd=tmp_path, env={"UV_CACHE_DIR": "/c"})
    assert result.ok and "UV_CACHE_DIR=/c" in result.stdout
    _assert_clean(result.stdout)


def test_a_mirror_fetch_refuses_local_transports(tmp_path, git_repo):
    from bot.local.git import GitError
    from bot.local.mirror import RepoMirror

    sha = git_repo.commit({"a.txt": "a\n"})
    # A clone URL naming a local path is never read, even if one got into the database.
    mirror = RepoMirror(tmp_path / "data", "acme/widgets", f"file://{git_repo.path}")
    with pytest.raises(GitError, match="transport 'file' not allowed"):
        mirror.fetch_pull(None, 1, "main", sha, sha)
