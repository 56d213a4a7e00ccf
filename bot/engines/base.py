"""The one interface every CI engine implements, and the registry that names them.

prbot never schedules GPUs itself: it asks the engine the repository already uses to build
one head with the selected steps, then reads job states and artifacts back. Adding an engine
is one module that implements :class:`Engine` and registers a factory in :data:`ENGINES`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
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


@dataclass(frozen=True)
class BuildList:
    """Builds in Buildkite's REST shape, newest first, every attempt of a job included (a
    retried job names its retry in ``retried_in_job_id``); ``cut``: there were more than the
    bound allowed reading; ``stopped``: why the read ended early (a page timed out, a 5xx),
    what came before it kept."""

    builds: tuple[dict[str, Any], ...]
    cut: bool = False
    read_pages: int = 0
    stopped: str | None = None


class Engine(Protocol):
    """Dispatch and results, and what CI signal (bot/worker/ci/signal.py) judges a failed job
    by: the head build with every attempt, the base branch's recent builds, one retry. Each
    engine answers in Buildkite's build shape (bot/jobs/ci_history.py reads it), so the
    classifier knows no engine."""

    name: str

    def create_build(self, request: BuildRequest) -> BuildRef: ...

    def find_build(
        self, dispatch_key: str, commit: str, *, repo: str, pr: int | None = None
    ) -> BuildRef | None:
        """The build prbot created under this key for PR ``pr`` of ``repo``, as the engine's
        API lists it (a build anyone else made, whatever its meta-data or name says, is never
        it), or None."""
        ...

    def jobs(self, build: BuildRef) -> list[JobState]: ...

    def artifacts(self, build: BuildRef, job: JobState) -> tuple[Artifact, ...]: ...

    def result_files(
        self, build: BuildRef, job: JobState, *, limit: int, max_files: int
    ) -> tuple[list[tuple[str, bytes]], list[str]]:
        """The job's benchmark result files ``(name, bytes)``, and why any were not read."""
        ...

    def download(self, artifact: Artifact, *, limit: int) -> bytes: ...

    @property
    def history_source(self) -> str:
        """What a base-branch history read from this engine is cached under (one pipeline,
        one workflow): two engines of one name with other settings never share one."""
        ...

    def head_build(self, build: BuildRef) -> dict[str, Any]:
        """One build prbot made, every attempt of its jobs included; EngineError otherwise."""
        ...

    def branch_builds(self, repo: str, branch: str, *, limit: int) -> BuildList:
        """The branch's latest completed builds (at most ``limit``), newest first; a read
        that stops half-way comes back with ``stopped``, never as an error."""
        ...

    def builds_of_commit(self, repo: str, commit: str, *, max_pages: int) -> BuildList:
        """The repository's own builds of a commit (to report what they ran); EngineError."""
        ...

    # True: retry_failed re-runs a build's failures together and only once the whole build
    # finished (GitHub's "re-run failed jobs"), so a retry due earlier waits for that.
    retry_waits_for_build: bool

    def retry_failed(self, build: BuildRef, job_ids: Sequence[str]) -> dict[str, str]:
        """Run these failed jobs once more on the same commit: ``{job id: the new attempt's
        URL}`` for each one retried (``""`` while the engine has not made the attempt yet);
        a job left out was refused."""
        ...


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
