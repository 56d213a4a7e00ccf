"""The ``checks.jobs`` rule block: the repository's step files, its hardware, the jobs prbot
may choose, and the benchmark verdict's thresholds."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.core.sections import CheckRules, valid_regex
from bot.jobs.compare import DEFAULT_ALPHA, DEFAULT_FACTOR, DEFAULT_ROUNDS
from bot.jobs.selection import RuleJob

# Failures that fail the check when the rules name none (CiSignalRules.fail_on says why).
DEFAULT_FAIL_ON = ("new", "unknown")
# The check run names and status contexts that name a step when the rules name none.
DEFAULT_CHECK_NAMES = ("{key}", "{label}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepFileRules(_Strict):
    # The repository's step files, read at base; their keys and devices are kept as they are.
    files: list[str] = Field(default_factory=lambda: [".buildkite/test_areas/*.yaml"])
    # prefix: vllm-project/ci-infra's current generator; substring: the older test-pipeline.
    match: Literal["prefix", "substring"] = "prefix"
    # What an empty source_file_dependencies list means (the two generators disagree).
    empty_dependencies: Literal["nothing", "always"] = "nothing"
    # Step keys (globs) prbot may choose as smoke jobs; nothing else in the pipeline.
    candidates: list[str] = Field(default_factory=list)


class PlatformRules(_Strict):
    paths: list[str] = Field(min_length=1)
    devices: list[str] = Field(min_length=1)


class HardwareRules(_Strict):
    # Compute capability -> the CI machine labels that have it ("10.0": [b200, b200-k8s]).
    capabilities: dict[str, list[str]] = Field(default_factory=dict)
    # Platforms known by their paths rather than a capability check (ROCm backends ask the
    # platform at run time): a changed file under these paths runs on these machines only.
    platforms: dict[str, PlatformRules] = Field(default_factory=dict)
    # Where a changed file must declare its hardware for the choice to narrow.
    scope: list[str] = Field(default_factory=list)
    # Files in scope that carry no kernel code of their own (the registry).
    neutral: list[str] = Field(default_factory=list)
    # Each platform's own file (cuda: vllm/platforms/cuda.py). A backend class that declares
    # no capability runs where a platform whose file names its registry member runs: the
    # platforms above by their devices, "cuda" on every capability's machines, any other
    # (xpu) on none of the configured machines.
    platform_files: dict[str, str] = Field(default_factory=dict)


class RegistryRules(_Strict):
    paths: list[str] = Field(default_factory=list)
    enums: list[str] = Field(default_factory=list)


class PriorityRules(_Strict):
    """Where the platform orders its backends: ``function`` in ``file``, the branch under
    ``if <flag>:`` for the machine's capability major (vLLM: cuda.py's
    ``_get_backend_priorities``, ``use_mla``). A backend new in the PR is benchmarked
    against the ones this list picks today."""

    file: str
    function: str
    flag: str
    enum: str


class RuleJobRules(_Strict):
    name: str
    kind: Literal["gpu_smoke", "benchmark"]
    hardware: str
    engine: str = "buildkite"
    run_if_changed: list[str] = Field(default_factory=list)
    skip_if_only_changed: list[str] = Field(default_factory=list)
    config: str | None = None
    per_backend: bool = False
    # The pipeline step that runs it (a benchmark step reads PRBOT_BENCHMARK_* from its env
    # and uploads one results JSON per run); without one the job is shown, never dispatched.
    step_key: str | None = None
    # For a benchmark of a backend absent at base: the incumbents to compare it with.
    priorities: PriorityRules | None = None
    # Which backends the config can measure, by member name (regexes, searched): the job
    # takes only those, and measures a new one against incumbents of the same kind. vLLM's
    # dense MLA decode config cannot run a sparse backend, nor is a sparse one measured
    # against dense ones (the platform's one priority list holds both kinds).
    backends_when: str | None = Field(default=None, max_length=200)
    backends_unless: str | None = Field(default=None, max_length=200)

    @field_validator("backends_when", "backends_unless")
    @classmethod
    def _backend_pattern_compiles(cls, value: str | None) -> str | None:
        return valid_regex(value)

    def measures(self, backend: str) -> bool:
        """Whether the job's config can measure the registry member ``backend``."""
        if self.backends_when and not re.search(self.backends_when, backend):
            return False
        return not (self.backends_unless and re.search(self.backends_unless, backend))

    def to_rule_job(self) -> RuleJob:
        """The job as selection takes it (plain data, no pydantic)."""
        return RuleJob(
            self.name,
            self.kind,
            self.hardware,
            self.engine,
            tuple(self.run_if_changed),
            tuple(self.skip_if_only_changed),
            self.config,
            self.per_backend,
            self.step_key,
        )


class BenchmarkRules(_Strict):
    # ABBA rounds of one job (each a base and a head run, on one GPU).
    runs: int = Field(default=DEFAULT_ROUNDS, ge=2, le=50)
    # The smallest change called a change: a regression's point ratio is at least 1 + factor.
    # Below the change to be caught (3% to catch 5%: docs/benchmarks/gpu_verdicts.md).
    factor: float = Field(default=DEFAULT_FACTOR, gt=0, lt=1)
    alpha: float = Field(default=DEFAULT_ALPHA, gt=0, lt=0.5)  # false-discovery rate across configs
    # Base and head recorded on two different GPUs (uuids) are inconclusive unless this is
    # on; then they are compared unpaired (two samples, not rounds), and the reason says so.
    allow_different_gpus: bool = False


class CiSignalRules(_Strict):
    """How a failed GPU job is sorted (``bot.jobs.ci_signal``) and what fails the check."""

    enabled: bool = True
    # Base-branch builds read per repository and branch (newest first; 50 a page).
    history_builds: int = Field(default=50, ge=1, le=500)
    # broken_trunk: the step failed in this many latest completed runs at or before the
    # merge base (or in the merge base's own build).
    broken_trunk_builds: int = Field(default=2, ge=1, le=20)
    # flaky: this many failures that did not stay (alone between passes, or passed on a
    # retry of the same commit) among the step's last flaky_window completed runs.
    flaky_window: int = Field(default=30, ge=2, le=500)
    flaky_failures: int = Field(default=2, ge=1, le=100)
    # Fewer completed runs of the step on the base branch than this: unknown, never new.
    min_base_runs: int = Field(default=3, ge=1, le=100)
    # In dispatch mode, a failure with no trunk history is retried once on the same
    # commit before it is called new.
    retry: bool = True
    # Classifications that fail the check run; the others are shown and pass. ``unknown``
    # fails by default: a failure prbot cannot explain (no base-branch history yet, as in a
    # repository whose GPU workflow runs only on dispatch) is still the PR's until shown
    # otherwise; only a failure shown flaky or broken on trunk stops blocking.
    fail_on: list[Literal["new", "unknown", "broken_trunk", "flaky"]] = Field(
        default_factory=lambda: list(DEFAULT_FAIL_ON)
    )

    def thresholds(self) -> dict[str, int]:
        """The numbers ``bot.jobs.ci_signal.SignalRules`` takes."""
        return {
            "history_builds": self.history_builds,
            "broken_trunk_builds": self.broken_trunk_builds,
            "flaky_window": self.flaky_window,
            "flaky_failures": self.flaky_failures,
            "min_base_runs": self.min_base_runs,
        }


class ApprovalRules(_Strict):
    # Logins that approve like people with write access (vLLM's CI_TRUSTED_USERS).
    trusted_users: list[str] = Field(default_factory=list, max_length=500)
    # A PR's author may run the approval command on their own head once a trusted reviewer
    # (write access or trusted_users) approved the PR in a review...
    author_after_review: bool = False
    # ...or while one of these labels is on the PR (vLLM: ready, ready-run-all-tests).
    author_labels: list[str] = Field(default_factory=list)
    # An author's draft is refused (vLLM refuses it; writers may still approve a draft).
    author_on_drafts: bool = False
    # The PR's GitHub reviewDecision must be APPROVED as well (vLLM's has_trusted_approval
    # asks it first). GitHub says null where the base branch requires no review, and then no
    # review delegates, as in vLLM.
    review_decision: bool = False

    @property
    def delegates(self) -> bool:
        return self.author_after_review or bool(self.author_labels)


class RepositoryChecksRules(_Strict):
    """Which of other apps' check runs and commit statuses of a head name a smoke step."""

    # A check run's name or a status's context names a step when it is one of these filled
    # in: {key} the step key, {label} its label, {slug} the label lower-cased with each run
    # of other characters one "-", {slug_words} the same with + / . as plus, slash, dot
    # (vLLM: buildkite/ci/pr/ and each slug); "<name>-<n>" is a shard. Empty: none read.
    names: list[str] = Field(default_factory=lambda: list(DEFAULT_CHECK_NAMES), max_length=20)
    # The apps (slugs) whose check runs count; none by default (statuses only). A check
    # run's name is its app's to choose, and CI apps name them after jobs of the config in
    # the PR's own tree: GitHub Actions for a fork's workflow, and the CI services that
    # build forks from the PR's config file likewise. Name an app here only where a PR
    # cannot name its check runs.
    check_run_apps: list[str] = Field(default_factory=list, max_length=50)


class JobsRules(CheckRules):
    steps: StepFileRules | None = None
    hardware: HardwareRules = Field(default_factory=HardwareRules)
    registry: RegistryRules = Field(default_factory=RegistryRules)
    jobs: list[RuleJobRules] = Field(default_factory=list)
    benchmark: BenchmarkRules = Field(default_factory=BenchmarkRules)
    ci_signal: CiSignalRules = Field(default_factory=CiSignalRules)
    repository_checks: RepositoryChecksRules = Field(default_factory=RepositoryChecksRules)
    # Labels that approve the PR's current head for GPU jobs when someone with write access
    # adds them (like the approval command; a push needs the label added again).
    approval_labels: list[str] = Field(default_factory=list)
    # Teams ("org/slug") whose members' PRs dispatch GPU jobs without approval, like authors
    # with write access.
    trusted_teams: list[str] = Field(default_factory=list)
    # Who approves a head's GPU jobs besides writers, and when a PR's author may start them
    # (the repository's own rule; vLLM's is in .github/workflows/scripts/run_ci_command.py).
    approval: ApprovalRules = Field(default_factory=lambda: ApprovalRules())
