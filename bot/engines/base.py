"""The one interface every CI engine implements, and the registry that names them.

prbot never schedules GPUs itself: it asks the engine the repository already uses to build
one head with the selected steps, then reads job states and artifacts back. Adding an engine
is one module that implements :class:`Engine` and registers a factory in :data:`ENGINES`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

# The environment a build may receive. Anything else (a token, a key path, prbot's own
# settings) never leaves prbot: the engine's builds run PR code.
ALLOWED_BUILD_ENV = frozenset(
    {
        "VLLM_CI_ONLY_STEP_KEYS",
        "PRBOT_JOB_ID",
        "PRBOT_BENCHMARK_BACKENDS",
        "PRBOT_BENCHMARK_CONFIG",
        "PRBOT_BENCHMARK_RUNS",
        "PRBOT_BENCHMARK_COMPARE",
        "PRBOT_BENCHMARK_BASE_COMMIT",
        "PRBOT_BENCHMARK_AGAINST",
    }
)


# The meta-data field every build carries: the dispatch key of the records it runs.
DISPATCH_META = "prbot_dispatch"


class EngineError(RuntimeError):
    """The engine refused or could not be reached; ``str()`` is one line for the report.

    ``transient``: worth retrying (unreachable, a 5xx, rate limited), as opposed to a refusal
    that will not change (a 4xx about the request).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class BuildRequest:
    repo: str  # owner/name
    pr_number: int
    head_sha: str
    branch: str
    base_branch: str
    message: str
    step_keys: tuple[str, ...]
    meta_data: Mapping[str, str] = field(default_factory=dict)  # DISPATCH_META: the key
    env: Mapping[str, str] = field(default_factory=dict)
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unexpected = sorted(set(self.env) - ALLOWED_BUILD_ENV)
        if unexpected:
            raise ValueError(f"build env may not carry {', '.join(unexpected)}")


@dataclass(frozen=True)
class BuildRef:
    engine: str
    id: str
    number: int | None
    web_url: str


@dataclass(frozen=True)
class Artifact:
    id: str
    filename: str
    size: int
    download_url: str


@dataclass(frozen=True)
class JobState:
    step_key: str | None
    state: str  # the engine's word: scheduled, running, passed, failed, timed_out, ...
    web_url: str
    job_id: str


class Engine(Protocol):
    name: str

    def create_build(self, request: BuildRequest) -> BuildRef: ...

    def find_build(self, dispatch_key: str, commit: str, *, repo: str) -> BuildRef | None:
        """The build prbot created under this key, as the engine's API lists it (a build
        anyone else made, whatever its meta-data or name says, is never it), or None."""
        ...

    def jobs(self, build: BuildRef) -> list[JobState]: ...

    def artifacts(self, build: BuildRef, job: JobState) -> tuple[Artifact, ...]: ...

    def result_files(
        self, build: BuildRef, job: JobState, *, limit: int, max_files: int
    ) -> tuple[list[tuple[str, bytes]], list[str]]:
        """The job's benchmark result files ``(name, bytes)``, and why any were not read."""
        ...

    def download(self, artifact: Artifact, *, limit: int) -> bytes: ...


# A factory builds its engine from prbot's settings and, for engines that work through
# GitHub, the installation's client (typed Any: the GitHub layer sits above this one). It
# raises EngineError when its settings are missing.
EngineFactory = Callable[[Any, Any], Engine]
ENGINES: dict[str, EngineFactory] = {}


def register(name: str) -> Callable[[EngineFactory], EngineFactory]:
    """Name an engine's factory. Each module of this package registers its own engine."""

    def decorate(factory: EngineFactory) -> EngineFactory:
        ENGINES[name] = factory
        return factory

    return decorate


def load_engines() -> dict[str, EngineFactory]:
    """Import every module of this package, so each registers itself: adding an engine is
    adding a module, with no list to edit."""
    package = __package__ or "bot.engines"
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
    return ENGINES


def make_engine(name: str, settings: Any, client: Any = None) -> Engine:
    """The engine ``name``, built from ``settings`` (bot.runtime.settings.Settings)."""
    engines = load_engines()
    if name not in engines:
        raise EngineError(f"no CI engine {name!r} (known: {', '.join(sorted(engines))})")
    return engines[name](settings, client)
