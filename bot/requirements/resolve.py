"""Resolution with the real uv (``uv pip compile``), in parallel, cached by input hash.

Each request is one (platform, arch, python) with its effective input already flattened.
The cache key covers the input text, the options and uv's version, so a re-check with no
requirement change runs uv zero times. Failures are cached too, for
``failure_ttl`` (a missing release may be published meanwhile); an unreachable index or a
timeout is not cached at all, and comes back as ``skipped``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from bot.core.sections import Cache, CheckContext, CommandRunner
    from bot.requirements.config import RequirementsRules

log = logging.getLogger(__name__)

CACHE_NAMESPACE = "uv-resolution"
ResolutionStatus = Literal["ok", "failed", "skipped"]

# uv's wording when the index (or a URL) could not be reached at all.
_NETWORK_ERROR = re.compile(
    r"Failed to fetch|error sending request|dns error|tcp connect error|Connection refused|"
    r"operation timed out|timed out|Network is unreachable|Could not connect|"
    r"failed to lookup address|certificate|Request failed after",
    re.I,
)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._\-]*)(?:\[[^\]]*\])?==([^\s;]+)")


def uv_binary() -> str:
    """Path of the pinned uv that ships as the ``uv`` PyPI package."""
    from uv import find_uv_bin

    return find_uv_bin()


def uv_version() -> str:
    try:
        return version("uv")
    except PackageNotFoundError:
        return "unknown"


def minimal_path() -> str:
    """PATH for uv: prbot's interpreter, git (for VCS requirements) and the system dirs."""
    dirs = [os.path.dirname(sys.executable)]
    git = shutil.which("git")
    if git:
        dirs.append(os.path.dirname(git))
    dirs += ["/usr/local/bin", "/usr/bin", "/bin"]
    return os.pathsep.join(dict.fromkeys(dirs))


@dataclass(frozen=True)
class ResolutionRequest:
    """One uv run's input: flattened requirements, constraints, target and options."""

    requirements: str
    constraints: str
    python_version: str
    python_platform: str | None
    options: tuple[str, ...] = ()

    def cache_key(self, uv: str) -> str:
        payload = json.dumps([uv, *asdict(self).values()], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class Resolution:
    status: ResolutionStatus
    detail: str
    pins: dict[str, str] = field(default_factory=dict)
    cached: bool = False
    at: float = 0.0  # when uv produced it (seconds since the epoch)

    def to_json(self) -> str:
        data = {"status": self.status, "detail": self.detail, "pins": self.pins, "at": self.at}
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Resolution | None:
        try:
            data = json.loads(text)
            pins = dict(data.get("pins", {}))
            at = float(data.get("at", 0.0))
            return cls(data["status"], data["detail"], pins, cached=True, at=at)
        except (ValueError, KeyError, TypeError):
            return None


# A local path in uv's text: the sandbox's temp dir, /etc/…, a file: URL. A report is public,
# so none of them may be echoed (it would map the server's disk for whoever asks).
_FILE_URL = re.compile(r"file:[^\s`'\")]*", re.I)
_ABSOLUTE_PATH = re.compile(r"(?<![\w:/.\-])(?:~|\.\.)?/[^\s`'\")\]]*")


def scrub_paths(text: str) -> str:
    """``text`` with every local path and ``file:`` URL replaced by ``<local path>``.

    URLs keep their host and path (``https://pypi.org/simple/x``): only a ``/`` that does
    not follow a scheme, a host or a word is the start of a local path.
    """
    text = _FILE_URL.sub("<local path>", text)
    return _ABSOLUTE_PATH.sub("<local path>", text)


def failure_cause(stderr: str, limit: int = 2) -> str:
    """uv's cause in a line or two, without warnings, decoration or local paths."""
    stderr = scrub_paths(stderr)
    lines = [re.sub(r"^[\s│├╰─▶×]+", "", line).strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line and not line.startswith("warning:")]
    start = next((i for i, line in enumerate(lines) if line.startswith("error:")), 0)
    picked = [line.removeprefix("error: ").removeprefix("cause: ") for line in lines[start:]]
    if picked and picked[0].startswith("No solution found") and len(picked) > 1:
        picked = picked[1:]
    return " ".join(picked[:limit])[:400] or "uv failed without a message"


_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s`'\")]+", re.I)


def network_cause(stderr: str) -> str:
    """Which host could not be reached and why, e.g. ``download.pytorch.org: dns error``.

    uv prints the URL it fetched, then a chain of causes; the innermost cause says why
    (DNS, refused, timed out). The URL's path differs per cell and package, the host does
    not, so every cell cut off from the same index gets the same line.
    """
    lines = [line.strip() for line in scrub_paths(stderr).splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
    if start is None:
        return failure_cause(stderr)
    block = []
    for line in lines[start:]:
        if block and line.startswith(("warning:", "error:")):
            break
        block.append(line)
    url = next((m.group(0) for line in block if (m := _URL.search(line))), "")
    host = urlsplit(url.removeprefix("git+")).netloc.rsplit("@", 1)[-1] if url else ""
    causes = [line.removeprefix("cause:").strip() for line in block[1:] if line]
    innermost = causes[-1] if causes else block[0].removeprefix("error:").strip()
    innermost = innermost if len(innermost) <= 160 else innermost[:159] + "…"
    return f"{host}: {innermost}" if host else innermost


def parse_pins(stdout: str) -> dict[str, str]:
    pins = {}
    for line in stdout.splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


class UvResolver:
    """Runs ``uv pip compile`` through a sandboxed runner; safe to use from one thread."""

    def __init__(
        self,
        runner: CommandRunner | None,
        cache: Cache | None,
        work_dir: Path,
        *,
        timeout: float = 180.0,
        http_timeout: int = 30,
        max_parallel: int = 4,
        uv: str | None = None,
        cache_dir: Path | None = None,
        failure_ttl: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.runner = runner
        self.cache = cache
        self.work_dir = Path(work_dir)
        self.timeout = timeout
        self.http_timeout = http_timeout
        self.max_parallel = max_parallel
        self.uv = uv
        # uv's own download/metadata cache; pass a persistent one to keep it across runs.
        self.cache_dir = Path(cache_dir) if cache_dir else self.work_dir / "uv-cache"
        # A failure can heal without any input change (the pinned release gets published, an
        # index comes back), so a cached one is trusted only this long; a success for ever.
        self.failure_ttl = failure_ttl
        self.clock = clock
        self.uv_runs = 0
        self._lock = threading.Lock()

    def environment(self) -> dict[str, str]:
        """uv settings for every run: shared cache, no config files, no Python downloads."""
        return {
            "UV_CACHE_DIR": str(self.cache_dir),
            "UV_NO_CONFIG": "1",
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_HTTP_TIMEOUT": str(self.http_timeout),
            # Retries turn an unreachable index into minutes of waiting; one try is enough.
            "UV_HTTP_RETRIES": "0",
            "UV_NO_PROGRESS": "1",
            # Markers come from --python-version/--python-platform. Naming the interpreter and
            # keeping PATH short spares uv probing every python on PATH (pyenv shims take
            # seconds) and keeps runs reproducible.
            "UV_PYTHON": sys.executable,
            "PATH": minimal_path(),
        }

    def resolve_all(self, requests: Sequence[ResolutionRequest]) -> list[Resolution]:
        """One result per request, in order; identical requests share one uv run."""
        if self.runner is None:
            return [Resolution("skipped", "no sandboxed runner to run uv") for _ in requests]
        uv_ver = uv_version()
        keys = [request.cache_key(uv_ver) for request in requests]
        results: dict[str, Resolution] = {}
        pending: dict[str, ResolutionRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key in results or key in pending:
                continue
            stored = self._cache_get(key)
            cached = Resolution.from_json(stored) if stored else None
            if cached is not None and cached.status == "failed":
                if self.clock() - cached.at > self.failure_ttl:
                    cached = None
            if cached is not None:
                results[key] = cached
            else:
                pending[key] = request
        if pending:
            before = getattr(self.runner, "invocations", None)
            with ThreadPoolExecutor(max_workers=self.max_parallel) as pool:
                done = dict(zip(pending, pool.map(self._run, pending.items()), strict=True))
            # SandboxRunner's counter is not thread-safe; set it from our own count.
            if isinstance(before, int):
                self.runner.invocations = before + len(pending)
            for key, resolution in done.items():
                resolution.at = self.clock()
                results[key] = resolution
                if resolution.status != "skipped":
                    self._cache_put(key, resolution)
        return [results[key] for key in keys]

    # A broken cache backend costs uv runs, never the section.
    def _cache_get(self, key: str) -> str | None:
        if self.cache is None:
            return None
        try:
            return self.cache.get(CACHE_NAMESPACE, key)
        except Exception:  # noqa: BLE001
            log.warning("uv-resolution cache read failed", exc_info=True)
            return None

    def _cache_put(self, key: str, resolution: Resolution) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put(CACHE_NAMESPACE, key, resolution.to_json())
        except Exception:  # noqa: BLE001
            log.warning("uv-resolution cache write failed", exc_info=True)

    def _run(self, item: tuple[str, ResolutionRequest]) -> Resolution:
        key, request = item
        with self._lock:
            self.uv_runs += 1
        try:
            run_dir = self.work_dir / "uv-runs" / key[:16]
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "requirements.in").write_text(request.requirements)
            argv = [self.uv or uv_binary(), "pip", "compile", "requirements.in"]
            if request.constraints:
                (run_dir / "constraints.txt").write_text(request.constraints)
                argv += ["-c", "constraints.txt"]
            argv += ["--python-version", request.python_version]
            if request.python_platform:
                argv += ["--python-platform", request.python_platform]
            argv += ["--no-header", "--no-annotate", *request.options]
            result = self.runner.run(
                argv, cwd=run_dir, env=self.environment(), timeout=self.timeout
            )
        except OSError as exc:  # no uv binary, unwritable work dir: say so, do not crash
            return Resolution("skipped", f"cannot run uv: {scrub_paths(str(exc))}")
        if result.timed_out:
            return Resolution("skipped", f"uv timed out after {self.timeout:g}s")
        if result.returncode == 0:
            pins = parse_pins(result.stdout)
            return Resolution("ok", f"{len(pins)} packages", pins)
        cause = failure_cause(result.stderr)
        if _NETWORK_ERROR.search(result.stderr) and "No solution found" not in result.stderr:
            return Resolution("skipped", f"index unreachable: {network_cause(result.stderr)}")
        return Resolution("failed", cause)


def resolver_for(context: CheckContext, rules: RequirementsRules) -> UvResolver:
    """The one place a check's :class:`UvResolver` is built: runner, caches and limits."""
    return UvResolver(
        context.runner,
        context.cache,
        context.work_dir,
        timeout=rules.uv_timeout_seconds,
        http_timeout=rules.uv_http_timeout_seconds,
        max_parallel=rules.max_parallel,
        failure_ttl=rules.uv_failure_cache_seconds,
        cache_dir=context.uv_cache_dir,
    )
