"""Shared fixtures: real git repositories in temp dirs, rule sets, check contexts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.checks.base import CheckContext

# The suite's figures are the default install's: where prbot[embeddings] is installed too, the
# model stays off (its own tests load it explicitly), so scores are the same as in CI.
os.environ.setdefault("PRBOT_EMBEDDINGS", "0")

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


@pytest.fixture(autouse=True)
def _data_dir_per_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    """Nothing a test runs writes into the developer's ./.prbot or ~/.cache/prbot."""
    monkeypatch.setenv("PRBOT_DATA_DIR", str(tmp_path_factory.mktemp("prbot-data")))


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


# --- database fixtures (bot.store): every store test runs on SQLite and on PostgreSQL -------


@pytest.fixture(
    params=[pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]
)
def database_url(request: pytest.FixtureRequest, tmp_path: Path):
    """A URL of an empty database: a SQLite file, or a fresh schema in PRBOT_TEST_DATABASE_URL.

    Each Postgres test gets its own schema (search_path set in the URL), dropped afterwards,
    so tests never see each other's rows and can run again and again.
    """
    from bot.testing.pg_schema import scratch_schema

    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'prbot.sqlite'}"
        return
    base = os.environ.get("PRBOT_TEST_DATABASE_URL")
    if not base:
        pytest.skip("PRBOT_TEST_DATABASE_URL is not set")
    url, drop = scratch_schema(base, "prbot_test")
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def engine(database_url: str):
    """A migrated engine on ``database_url``."""
    from bot.store.db import make_engine, migrate

    built = make_engine(database_url)
    migrate(built)
    yield built
    built.dispose()


@pytest.fixture
def github_server(tmp_path: Path):
    """A started local GitHub test server (bot.testing.FakeGitHub), stopped after the test."""
    from bot.testing import FakeGitHub

    server = FakeGitHub(root=tmp_path / "github").start()
    try:
        yield server
    finally:
        server.stop()


# --- handler fixtures (bot.worker.handlers): a HandlerContext on a real database and queue --------


@pytest.fixture
def handler_context(engine, tmp_path: Path):
    """A :class:`bot.worker.handlers.context.HandlerContext` with no GitHub App (dry-run shape)."""
    from bot.runtime.settings import Settings
    from bot.store.queue import Queue
    from bot.worker.handlers.context import HandlerContext

    settings = Settings(webhook_secrets=("s",), data_dir=tmp_path / "data", dry_run=True)
    return HandlerContext(settings, engine, Queue(engine, max_attempts=2), None)


@pytest.fixture
def app_context(engine, github_server, tmp_path: Path):
    """A HandlerContext whose App talks to the local GitHub test server (installation 1)."""
    from bot.github.app import GitHubApp
    from bot.runtime.settings import Settings
    from bot.store.queue import Queue
    from bot.worker.handlers.context import HandlerContext

    github_server.add_installation(1, "acme")
    key = tmp_path / "app.pem"
    key.write_text(github_server.private_key_pem)
    settings = Settings(
        webhook_secrets=("s",),
        app_id=str(github_server.app_id),
        private_key_path=key,
        github_api_url=github_server.url,
        github_request_interval=0,
        github_write_interval=0,
        data_dir=tmp_path / "data",
    )
    return HandlerContext(settings, engine, Queue(engine, max_attempts=2), GitHubApp(settings))


def pytest_sessionstart(session) -> None:  # noqa: ANN001
    """A PostgreSQL URL that is set but cannot be used stops the run at once, in one line,
    instead of every PostgreSQL test erroring on its own. Unset: those tests are skipped."""
    url = os.environ.get("PRBOT_TEST_DATABASE_URL")
    if not url or hasattr(session.config, "workerinput"):  # xdist workers: the controller checked
        return
    from bot.testing.pg_schema import unreachable

    problem = unreachable(url)
    if problem:
        pytest.exit(f"PRBOT_TEST_DATABASE_URL={url} cannot be used: {problem}", returncode=2)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001, ARG001
    """One line, not a skip list, for the PostgreSQL variants that had no database to run on."""
    skipped = terminalreporter.stats.get("skipped", [])
    unconfigured = sum(1 for r in skipped if "PRBOT_TEST_DATABASE_URL" in str(r.longrepr))
    if unconfigured:
        terminalreporter.write_line(
            f"{unconfigured} PostgreSQL variants skipped: set PRBOT_TEST_DATABASE_URL to run them"
        )
