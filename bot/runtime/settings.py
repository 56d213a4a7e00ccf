"""Settings from the environment. One place reads os.environ; everything else gets a Settings."""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from glob import escape as glob_escape
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_BUILDKITE_API_URL = "https://api.buildkite.com"
DEFAULT_ACTIONS_WORKFLOW = "prbot-gpu.yml"
MAX_BODY_BYTES = 25 * 1024 * 1024
# A signed Buildkite delivery older than this is a replay; a day is already far past any
# clock skew, and a larger value is most likely milliseconds given for seconds.
MAX_WEBHOOK_AGE_SECONDS = 86400.0


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


# systemd's EnvironmentFile= and compose's env_file: keep everything after "=" as the value,
# so "KEY=value   # note" arrives with the note; whitespace then "#" is never meant as a value.
_INLINE_COMMENT = re.compile(r"\s#")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")


def check_environment(environ: Mapping[str, str]) -> None:
    """Refuse any PRBOT_* value with a trailing comment or surrounding whitespace."""
    for name in sorted(environ):
        raw = environ[name]
        if not name.startswith("PRBOT_") or raw == "":
            continue
        if _INLINE_COMMENT.search(raw):
            raise ConfigError(
                f"{name} has a comment after its value ({_shown(name, raw)}); "
                "env files keep it as part of the value: put comments on lines of their own"
            )
        if raw != raw.strip():
            raise ConfigError(f"{name} has whitespace around its value ({_shown(name, raw)})")


def _shown(name: str, raw: str) -> str:
    # Secrets and tokens are named, never echoed.
    return "value hidden" if "SECRET" in name or "TOKEN" in name else repr(raw[:80])


# A shorter secret is guessable offline from one signed delivery; the examples' placeholder
# (deploy/prbot.env.example, the Kubernetes secret) is public. Both are refused at start.
MIN_SECRET_CHARS = 16
PLACEHOLDER_SECRETS = frozenset({"change-me", "changeme", "change_me", "replace-me", "secret"})


def check_secret(name: str, value: str) -> None:
    """Raise ConfigError for the examples' placeholder or a short secret; never echoes it."""
    if value.strip().lower() in PLACEHOLDER_SECRETS:
        raise ConfigError(
            f"{name} is the placeholder from the examples; set a random secret of at least "
            f"{MIN_SECRET_CHARS} characters (e.g. `openssl rand -hex 32`)"
        )
    if len(value) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"{name} is too short to be a secret: {len(value)} characters, at least "
            f"{MIN_SECRET_CHARS} needed (value hidden)"
        )


def _raw(name: str) -> str | None:
    raw = os.environ.get(name)
    return None if raw is None or raw == "" else raw


def _float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {raw!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum:g}, got {raw}")
    return value


def _positive(name: str, default: float) -> float:
    value = _float(name, default)
    if value <= 0:
        raise ConfigError(f"{name} must be above 0, got {value:g}")
    return value


def _int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    if not re.fullmatch(r"[+-]?\d{1,12}", raw):
        raise ConfigError(f"{name} must be a whole number, got {raw!r}")
    value = int(raw)
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def _choice(name: str, default: str, choices: tuple[str, ...], *, fold=str) -> str:  # noqa: ANN001
    raw = _raw(name)
    if raw is None:
        return default
    if fold(raw) not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return fold(raw)


def _api_url(name: str, default: str) -> str:
    raw = _raw(name)
    if raw is None:
        return default
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"{name} must be an http(s) URL such as {default}, got {raw!r}")
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        raise ConfigError(f"{name} has a bad port: {raw!r}") from None
    return raw.rstrip("/")


# Buildkite slugs are lowercase letters, digits, "-" and "_"; they go into API paths, so
# nothing else (no "/", "..", "?" or spaces) may reach one.
_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}")
# A token goes into an Authorization header: printable ASCII, no spaces ("Bearer x" pasted
# whole, or two tokens run together, is refused here rather than as a 401 at dispatch).
_TOKEN = re.compile(r"[!-~]{1,500}")
# The workflow prbot dispatches is named by its file in .github/workflows: no directory.
_WORKFLOW_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.ya?ml")
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def _slug(name: str) -> str | None:
    raw = _raw(name)
    if raw is None:
        return None
    if not _SLUG.fullmatch(raw):
        raise ConfigError(
            f"{name} must be a Buildkite slug (lowercase letters, digits, '-' and '_', as in "
            f"the pipeline's URL), got {raw[:80]!r}"
        )
    return raw


def _tokens(name: str) -> tuple[str, ...]:
    """A token, or several comma-separated (to rotate); never echoed in an error."""
    raw = _raw(name)
    if raw is None:
        return ()
    tokens = tuple(t.strip() for t in raw.split(","))
    if any(not _TOKEN.fullmatch(t) for t in tokens):
        raise ConfigError(
            f"{name} must be tokens without spaces or empty entries, comma-separated (value hidden)"
        )
    return tokens


def _https_url(name: str, default: str) -> str:
    """An https URL; http only to this machine (a test server), since a token goes with it."""
    url = _api_url(name, default)
    parts = urlsplit(url)
    loopback = parts.hostname in _LOOPBACK_HOSTS or (parts.hostname or "").startswith("127.")
    if parts.scheme != "https" and not loopback:
        raise ConfigError(f"{name} must be an https URL (http only on loopback), got {url!r}")
    return url


def _workflow_file(name: str, default: str) -> str:
    raw = _raw(name)
    if raw is None:
        return default
    if not _WORKFLOW_FILE.fullmatch(raw):
        raise ConfigError(
            f"{name} must be a workflow file name such as {default} (in .github/workflows, "
            f"no directory), got {raw[:80]!r}"
        )
    return raw


def _database_url(name: str) -> str | None:
    raw = _raw(name)
    if raw is None:
        return None
    scheme = raw.partition(":")[0].partition("+")[0]
    if scheme not in ("sqlite", "postgresql", "postgres") or "://" not in raw:
        raise ConfigError(
            f"{name} must be postgresql://user@host/db or sqlite:///path, "
            f"got one starting {raw[:12]!r}"
        )
    return raw


def _rules_name(name: str, default: str) -> str:
    raw = _raw(name)
    if raw is None:
        return default
    from bot.core.paths import rules_dir

    names = sorted(p.stem for p in rules_dir().glob("*.yaml"))
    if raw not in names:
        raise ConfigError(f"{name} must be one of {', '.join(names)}, got {raw!r}")
    return raw


@dataclass(frozen=True)
class CiSettings:
    """The CI engines prbot dispatches GPU jobs to (README "GPU jobs"); empty: none."""

    buildkite_organization: str | None = None
    buildkite_pipeline: str | None = None
    buildkite_token: str | None = field(default=None, repr=False)
    buildkite_api_url: str = DEFAULT_BUILDKITE_API_URL
    # Tokens proving Buildkite's webhooks (X-Buildkite-Token or X-Buildkite-Signature).
    buildkite_webhook_tokens: tuple[str, ...] = field(default=(), repr=False)
    buildkite_webhook_max_age: float = 300.0
    # GitHub Actions: the workflow dispatched on the PR's base branch (bot/engines/actions.py).
    actions_workflow: str = DEFAULT_ACTIONS_WORKFLOW

    @classmethod
    def from_env(cls) -> CiSettings:
        """Every PRBOT_BUILDKITE_* and PRBOT_ACTIONS_* setting, checked as Settings' are."""
        check_environment({n: v for n, v in os.environ.items() if n in CI_VARIABLES})
        tokens = _tokens("PRBOT_BUILDKITE_TOKEN")
        if len(tokens) > 1:
            raise ConfigError("PRBOT_BUILDKITE_TOKEN must be one token (value hidden)")
        token = tokens[0] if tokens else None
        organization = _slug("PRBOT_BUILDKITE_ORGANIZATION")
        pipeline = _slug("PRBOT_BUILDKITE_PIPELINE")
        given = {
            "PRBOT_BUILDKITE_ORGANIZATION": organization,
            "PRBOT_BUILDKITE_PIPELINE": pipeline,
            "PRBOT_BUILDKITE_TOKEN": token,
        }
        missing = [name for name, value in given.items() if value is None]
        if 0 < len(missing) < len(given):
            raise ConfigError(
                f"{missing[0]} is not set; Buildkite needs PRBOT_BUILDKITE_ORGANIZATION, "
                "PRBOT_BUILDKITE_PIPELINE and PRBOT_BUILDKITE_TOKEN together (or none of them)"
            )
        max_age = _positive("PRBOT_BUILDKITE_WEBHOOK_MAX_AGE", 300.0)
        if max_age > MAX_WEBHOOK_AGE_SECONDS:
            raise ConfigError(
                f"PRBOT_BUILDKITE_WEBHOOK_MAX_AGE is in seconds and at most "
                f"{MAX_WEBHOOK_AGE_SECONDS:g}, got {max_age:g}"
            )
        return cls(
            buildkite_organization=organization,
            buildkite_pipeline=pipeline,
            buildkite_token=token,
            buildkite_api_url=_https_url("PRBOT_BUILDKITE_API_URL", DEFAULT_BUILDKITE_API_URL),
            buildkite_webhook_tokens=_tokens("PRBOT_BUILDKITE_WEBHOOK_TOKEN"),
            buildkite_webhook_max_age=max_age,
            actions_workflow=_workflow_file("PRBOT_ACTIONS_WORKFLOW", DEFAULT_ACTIONS_WORKFLOW),
        )


CI_VARIABLES = (
    "PRBOT_BUILDKITE_ORGANIZATION",
    "PRBOT_BUILDKITE_PIPELINE",
    "PRBOT_BUILDKITE_TOKEN",
    "PRBOT_BUILDKITE_API_URL",
    "PRBOT_BUILDKITE_WEBHOOK_TOKEN",
    "PRBOT_BUILDKITE_WEBHOOK_MAX_AGE",
    "PRBOT_ACTIONS_WORKFLOW",
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

    # Seconds between missed-delivery repair runs (bot/repair/redeliver.py); 0 turns them off.
    repair_interval: float = 600.0
    # Logs: text lines, or one JSON object a line (bot/runtime/logs.py).
    log_level: str = "WARNING"
    log_format: str = "text"

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Every PRBOT_* setting, checked: a bad value raises ConfigError naming it."""
        check_environment(os.environ)
        secrets = tuple(
            s.strip() for s in os.environ.get("PRBOT_WEBHOOK_SECRET", "").split(",") if s.strip()
        )
        key_path = _raw("PRBOT_PRIVATE_KEY_PATH")
        app_id = _raw("PRBOT_APP_ID")
        if app_id is not None and not app_id.isdigit():
            raise ConfigError(f"PRBOT_APP_ID must be the App's numeric id, got {app_id!r}")
        values: dict[str, object] = {
            "webhook_secrets": secrets,
            "app_id": app_id,
            "private_key_path": Path(key_path) if key_path else None,
            "database_url": _database_url("PRBOT_DATABASE_URL"),
            "github_api_url": _api_url("PRBOT_GITHUB_API_URL", DEFAULT_API_URL),
            "data_dir": Path(_raw("PRBOT_DATA_DIR") or ".prbot"),
            "default_rules": _rules_name("PRBOT_DEFAULT_RULES", "default"),
            "lease_seconds": _positive("PRBOT_LEASE_SECONDS", 300.0),
            "max_attempts": _int("PRBOT_MAX_ATTEMPTS", 5, minimum=1),
            "poll_seconds": _positive("PRBOT_POLL_SECONDS", 0.5),
            "worker_threads": _int("PRBOT_WORKER_THREADS", 2, minimum=1),
            "sandbox_user": _raw("PRBOT_SANDBOX_USER"),
            "github_timeout": _positive("PRBOT_GITHUB_TIMEOUT", 30.0),
            "github_request_interval": _float("PRBOT_GITHUB_REQUEST_INTERVAL", 0.25, minimum=0),
            "github_write_interval": _float("PRBOT_GITHUB_WRITE_INTERVAL", 1.0, minimum=0),
            "header_timeout": _positive("PRBOT_INTAKE_HEADER_TIMEOUT", 10.0),
            "body_timeout": _positive("PRBOT_INTAKE_BODY_TIMEOUT", 30.0),
            "keep_alive_timeout": _positive("PRBOT_INTAKE_KEEP_ALIVE", 5.0),
            "max_connections": _int("PRBOT_INTAKE_MAX_CONNECTIONS", 500, minimum=1),
            "max_inflight_bytes": int(_positive("PRBOT_INTAKE_MAX_INFLIGHT_MB", 100) * 1024**2),
            "worker_processes": _int("PRBOT_WORKER_PROCESSES", 1, minimum=1),
            "worker_memory_mb": _int("PRBOT_WORKER_MEMORY_MB", 4096, minimum=0),
            "repair_interval": _float("PRBOT_REPAIR_INTERVAL", 600.0, minimum=0),
            "log_level": _choice("PRBOT_LOG_LEVEL", "WARNING", LOG_LEVELS, fold=str.upper),
            "log_format": _choice("PRBOT_LOG_FORMAT", "text", LOG_FORMATS, fold=str.lower),
            "ci": CiSettings.from_env(),
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]

    def check_startup(self, *, github: bool, intake: bool = True) -> None:
        """What a long-running process needs before it starts anything: the key parses, the
        sandbox account exists, the data directory is writable. ``github=False``: no GitHub
        calls (intake only); ``intake=False``: no webhooks (a worker)."""
        if github and (self.private_key_path is not None or not self.dry_run):
            self.require_app()
            load_private_key(self.private_key(), "PRBOT_PRIVATE_KEY_PATH")
        elif intake and not self.webhook_secrets:
            raise ConfigError("missing settings: PRBOT_WEBHOOK_SECRET")
        self.check_secrets()
        if self.sandbox_user is not None:
            import pwd

            try:
                pwd.getpwnam(self.sandbox_user)
            except KeyError:
                raise ConfigError(
                    f"PRBOT_SANDBOX_USER: no account named {self.sandbox_user!r} on this host"
                ) from None
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"PRBOT_DATA_DIR: cannot create {self.data_dir}: {exc.strerror}"
            ) from None
        if not os.access(self.data_dir, os.W_OK | os.X_OK):
            raise ConfigError(f"PRBOT_DATA_DIR: {self.data_dir} is not writable")

    def check_secrets(self) -> None:
        """Every secret setting that is set: not a placeholder, not short (check_secret)."""
        for secret in self.webhook_secrets:
            check_secret("PRBOT_WEBHOOK_SECRET", secret)
        for token in self.ci.buildkite_webhook_tokens:
            check_secret("PRBOT_BUILDKITE_WEBHOOK_TOKEN", token)
        if self.ci.buildkite_token is not None:
            check_secret("PRBOT_BUILDKITE_TOKEN", self.ci.buildkite_token)
        password = _url_password(self.database_url)
        if password is not None and password.lower() in PLACEHOLDER_SECRETS:
            raise ConfigError(
                "PRBOT_DATABASE_URL has the placeholder password from the examples; "
                "set the database's real password"
            )

    def protect_files(self) -> None:
        """Keep what serve and worker write to themselves: umask 077 from here on; the data
        directory 0711 (a sandbox user reaches uv's cache in it, but cannot list it) or 0700;
        the database, its WAL and inbox, the mirrors and the rest of it closed to others
        (files from before were 0644, so a sandboxed child could read the database)."""
        os.umask(0o077)
        mode = 0o711 if self.sandbox_user else 0o700
        for path, wanted in [
            (self.data_dir, mode),
            *((p, None) for p in self.sandbox_secret_paths()),
        ]:
            try:
                info = path.lstat()
                if info.st_uid != os.geteuid() or path.is_symlink():
                    continue
                current = info.st_mode & 0o777
                target = wanted if wanted is not None else current & 0o700
                if current != target:
                    path.chmod(target)
            except OSError:
                continue

    def sandbox_secret_paths(self) -> list[Path]:
        """What a sandboxed child must not read (bot/local/sandbox.py hides it): the App key
        and an env file beside it, the SQLite database with its WAL and inbox, and everything
        in the data directory but uv's download cache (mirrors, locks, the intake's spool)."""
        paths: list[Path] = []
        if self.private_key_path is not None:
            paths += [self.private_key_path, self.private_key_path.with_name("prbot.env")]
        database = _sqlite_file(self.database_url or f"sqlite:///{self.data_dir}/prbot.sqlite")
        if database is not None and database.parent.is_dir():
            paths += sorted(database.parent.glob(glob_escape(database.name) + "*"))
        try:
            paths += sorted(p for p in self.data_dir.iterdir() if p.name != UV_CACHE_DIR_NAME)
        except OSError:
            pass
        return paths

    def private_key(self) -> str:
        if self.private_key_path is None:
            raise ConfigError("PRBOT_PRIVATE_KEY_PATH is not set")
        try:
            return self.private_key_path.read_text()
        except OSError as exc:
            raise ConfigError(
                f"PRBOT_PRIVATE_KEY_PATH: cannot read {self.private_key_path}: {exc.strerror}"
            ) from None

    def dispatch_key_secret(self) -> bytes:
        """What GPU jobs' dispatch keys are keyed with (bot/jobs/planner.py): derived from
        the first webhook secret, so no key is computable from what a PR's author can see.
        A dry run without secrets dispatches nothing, and gets a stand-in."""
        if not self.webhook_secrets:
            if self.dry_run:
                return b"dry run: no dispatch is sent"
            raise ConfigError("missing settings: PRBOT_WEBHOOK_SECRET (GPU jobs' dispatch keys)")
        derive = hmac.new(self.webhook_secrets[0].encode(), b"prbot dispatch keys", hashlib.sha256)
        return derive.digest()

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


def load_private_key(pem: str, name: str) -> None:
    """Raise ConfigError unless ``pem`` is an RSA private key (what GitHub issues)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        raise ConfigError(
            f"{name}: the file is not a PEM private key without a passphrase"
        ) from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError(f"{name}: GitHub App keys are RSA; this key is not")


def _url_password(url: str | None) -> str | None:
    if not url:
        return None
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


# The data directory's entry a sandboxed uv reads and writes (its download cache).
UV_CACHE_DIR_NAME = "uv-cache"


def _sqlite_file(url: str) -> Path | None:
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url == prefix:
        return None
    return Path(url[len(prefix) :].split("?", 1)[0])
