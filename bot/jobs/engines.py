"""The one interface every CI engine implements, and the registry that names them.

prbot never schedules GPUs itself: it asks the engine the repository already uses to build
one head with the selected steps, then reads job states and artifacts back. Adding an engine
is one module that implements :class:`Engine` and registers a factory in :data:`ENGINES`.
"""

from __future__ import annotations

import importlib
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

    def find_build(self, dispatch_key: str, commit: str) -> BuildRef | None:
        """The build an earlier attempt created with this key in its meta-data, if any."""
        ...

    def jobs(self, build: BuildRef) -> list[JobState]: ...

    def artifacts(self, build: BuildRef, job: JobState) -> tuple[Artifact, ...]: ...

    def result_files(
        self, build: BuildRef, job: JobState, *, limit: int, max_files: int
    ) -> tuple[list[tuple[str, bytes]], list[str]]:
        """The job's benchmark result files ``(name, bytes)``, and why any were not read."""
        ...

    def download(self, artifact: Artifact, *, limit: int) -> bytes: ...


EngineFactory = Callable[..., Engine]
ENGINES: dict[str, EngineFactory] = {}


def register(name: str) -> Callable[[EngineFactory], EngineFactory]:
    def decorate(factory: EngineFactory) -> EngineFactory:
        ENGINES[name] = factory
        return factory

    return decorate


# The engines prbot ships; each module registers itself when imported.
BUILTIN_ENGINE_MODULES = ("bot.jobs.buildkite", "bot.ci.actions")


def make_engine(name: str, **settings: Any) -> Engine:
    for module in BUILTIN_ENGINE_MODULES:
        importlib.import_module(module)
    if name not in ENGINES:
        raise EngineError(f"no CI engine {name!r} (known: {', '.join(sorted(ENGINES))})")
    return ENGINES[name](**settings)
