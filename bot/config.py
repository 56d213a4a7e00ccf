"""Settings from the environment. One place reads os.environ; everything else gets a Settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_API_URL = "https://api.github.com"
MAX_BODY_BYTES = 25 * 1024 * 1024


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None


def _positive(name: str, default: float) -> float:
    value = _float(name, default)
    if value <= 0:
        raise ConfigError(f"{name} must be above 0, got {value:g}")
    return value


@dataclass(frozen=True)
class CiSettings:
    """The CI engines prbot dispatches GPU jobs to (README "GPU jobs"); empty: none."""

    buildkite_organization: str | None = None
    buildkite_pipeline: str | None = None
    buildkite_token: str | None = field(default=None, repr=False)
    buildkite_api_url: str = "https://api.buildkite.com"
    # Tokens proving Buildkite's webhooks (X-Buildkite-Token or X-Buildkite-Signature).
    buildkite_webhook_tokens: tuple[str, ...] = field(default=(), repr=False)
    buildkite_webhook_max_age: float = 300.0
    # GitHub Actions: the workflow dispatched on the PR's base branch (bot/ci/actions.py).
    actions_workflow: str = "prbot-gpu.yml"

    @classmethod
    def from_env(cls) -> CiSettings:
        hooks = os.environ.get("PRBOT_BUILDKITE_WEBHOOK_TOKEN", "")
        return cls(
            buildkite_organization=os.environ.get("PRBOT_BUILDKITE_ORGANIZATION") or None,
            buildkite_pipeline=os.environ.get("PRBOT_BUILDKITE_PIPELINE") or None,
            buildkite_token=os.environ.get("PRBOT_BUILDKITE_TOKEN") or None,
            buildkite_api_url=os.environ.get(
                "PRBOT_BUILDKITE_API_URL", "https://api.buildkite.com"
            ).rstrip("/"),
            buildkite_webhook_tokens=tuple(t.strip() for t in hooks.split(",") if t.strip()),
            buildkite_webhook_max_age=_positive("PRBOT_BUILDKITE_WEBHOOK_MAX_AGE", 300.0),
            actions_workflow=os.environ.get("PRBOT_ACTIONS_WORKFLOW") or "prbot-gpu.yml",
        )


@dataclass(frozen=True)
class Settings:
    webhook_secrets: tuple[str, ...] = ()
    app_id: str | None = None
    private_key_path: Path | None = None
    database_url: str | None = None
    github_api_url: str = DEFAULT_API_URL
    data_dir: Path = field(default_factory=lambda: Path(".prbot"))
    default_rules: str = "default"
    dry_run: bool = False
    lease_seconds: float = 300.0
    max_attempts: int = 5
    poll_seconds: float = 0.5
    # Jobs spend most of their time in git and uv subprocesses, so threads overlap well.
    worker_threads: int = 2
    # Run sandboxed tools (uv, repository generators) as this unprivileged account.
    sandbox_user: str | None = None
    github_timeout: float = 30.0
    # PyGithub's pacing, after GitHub's advice against secondary rate limits. The local
    # test server needs none.
    github_request_interval: float = 0.25
    github_write_interval: float = 1.0
    max_body_bytes: int = MAX_BODY_BYTES
    # Intake limits against slow and partial requests (see README "Configuration").
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive_timeout: float = 5.0
    max_connections: int = 500
    max_inflight_bytes: int = 100 * 1024 * 1024
    # `prbot serve` runs its workers as this many supervised processes.
    worker_processes: int = 1
    # Address-space limit of each worker process (RLIMIT_AS), MiB; 0 for none.
    worker_memory_mb: int = 4096
    ci: CiSettings = field(default_factory=CiSettings)

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        secrets = tuple(
            s.strip() for s in os.environ.get("PRBOT_WEBHOOK_SECRET", "").split(",") if s.strip()
        )
        key_path = os.environ.get("PRBOT_PRIVATE_KEY_PATH")
        values: dict[str, object] = {
            "webhook_secrets": secrets,
            "app_id": os.environ.get("PRBOT_APP_ID") or None,
            "private_key_path": Path(key_path) if key_path else None,
            "database_url": os.environ.get("PRBOT_DATABASE_URL") or None,
            "github_api_url": os.environ.get("PRBOT_GITHUB_API_URL", DEFAULT_API_URL).rstrip("/"),
            "data_dir": Path(os.environ.get("PRBOT_DATA_DIR", ".prbot")),
            "default_rules": os.environ.get("PRBOT_DEFAULT_RULES", "default"),
            "lease_seconds": _float("PRBOT_LEASE_SECONDS", 300.0),
            "max_attempts": int(_float("PRBOT_MAX_ATTEMPTS", 5)),
            "poll_seconds": _float("PRBOT_POLL_SECONDS", 0.5),
            "worker_threads": int(_float("PRBOT_WORKER_THREADS", 2)),
            "sandbox_user": os.environ.get("PRBOT_SANDBOX_USER") or None,
            "github_timeout": _float("PRBOT_GITHUB_TIMEOUT", 30.0),
            "github_request_interval": _float("PRBOT_GITHUB_REQUEST_INTERVAL", 0.25),
            "github_write_interval": _float("PRBOT_GITHUB_WRITE_INTERVAL", 1.0),
            "header_timeout": _positive("PRBOT_INTAKE_HEADER_TIMEOUT", 10.0),
            "body_timeout": _positive("PRBOT_INTAKE_BODY_TIMEOUT", 30.0),
            "keep_alive_timeout": _positive("PRBOT_INTAKE_KEEP_ALIVE", 5.0),
            "max_connections": int(_positive("PRBOT_INTAKE_MAX_CONNECTIONS", 500)),
            "max_inflight_bytes": int(_positive("PRBOT_INTAKE_MAX_INFLIGHT_MB", 100) * 1024**2),
            "worker_processes": int(_positive("PRBOT_WORKER_PROCESSES", 1)),
            "worker_memory_mb": int(_float("PRBOT_WORKER_MEMORY_MB", 4096)),
            "ci": CiSettings.from_env(),
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]

    def private_key(self) -> str:
        if self.private_key_path is None:
            raise ConfigError("PRBOT_PRIVATE_KEY_PATH is not set")
        try:
            return self.private_key_path.read_text()
        except OSError as exc:
            raise ConfigError(
                f"PRBOT_PRIVATE_KEY_PATH: cannot read {self.private_key_path}: {exc.strerror}"
            ) from None

    def require_app(self) -> None:
        """The settings a live GitHub App needs; a clear error names what is missing."""
        missing = [
            name
            for name, value in (
                ("PRBOT_WEBHOOK_SECRET", self.webhook_secrets),
                ("PRBOT_APP_ID", self.app_id),
                ("PRBOT_PRIVATE_KEY_PATH", self.private_key_path),
            )
            if not value
        ]
        if missing:
            raise ConfigError(f"missing settings: {', '.join(missing)}")
