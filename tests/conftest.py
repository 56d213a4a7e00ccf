"""Shared fixtures: real git repositories in temp dirs, rule sets, check contexts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.checks.base import CheckContext

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


class GitRepo:
    """A real git repository in a temp dir, with helpers to write files and commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.path), *args],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, **GIT_ENV},
        ).stdout.strip()

    def write(self, files: dict[str, str | bytes | None]) -> None:
        """Write (or, with None, delete) files relative to the repo root."""
        for rel, content in files.items():
            target = self.path / rel
            if content is None:
                if target.exists():
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)

    def commit(self, files: dict[str, str | bytes | None], message: str = "change") -> str:
        self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def branch(self, name: str, start: str = "HEAD") -> None:
        self.git("checkout", "-q", "-B", name, start)


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., GitRepo]:
    counter = iter(range(1000))

    def factory(name: str | None = None) -> GitRepo:
        return GitRepo(tmp_path / (name or f"repo{next(counter)}"))

    return factory


@pytest.fixture
def git_repo(make_repo: Callable[..., GitRepo]) -> GitRepo:
    return make_repo("repo")


@pytest.fixture
def check_context(tmp_path: Path) -> CheckContext:
    work = tmp_path / "work"
    work.mkdir()
    return CheckContext(work_dir=work)
