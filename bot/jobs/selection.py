"""Which GPU smoke steps and kernel benchmarks a PR needs, each with the reason for it.

Two sources, both pure data:

- the repository's own Buildkite steps (``buildkite_steps``): a candidate step (rules name
  them by key glob) is selected when its ``source_file_dependencies`` match a changed path;
- rule jobs, with Prow's trigger meaning: ``run_if_changed`` globs select the job when any
  changed path matches; ``skip_if_only_changed`` skips it when every changed path matches.

Hardware then narrows the choice. When every changed file in the hardware scope (backend
code) declares the GPUs it runs on, the PR *targets* their union, and a GPU step on a
machine outside it is dropped with the reason: a backend that runs only on compute
capability 10.x gets the B200 step, not the H100 one. A changed file in scope that declares
nothing (shared code) means the change may reach every GPU, and nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from bot.core.globs import path_matches
from bot.jobs.buildkite_steps import CiStep, EmptyMeans, MatchMode, matching_evidence

GPU_SMOKE = "gpu_smoke"
BENCHMARK = "benchmark"


@dataclass(frozen=True)
class SelectedJob:
    """A job the PR needs: the contract's ``jobs`` finding, before any dispatch."""

    name: str
    kind: str  # gpu_smoke | benchmark
    hardware: str
    reason: str
    engine: str
    step_key: str | None = None
    backends: tuple[str, ...] = ()
    config: str | None = None
    # A smoke step's ``parallelism``: its check runs and statuses may name each shard.
    parallelism: int = 1


@dataclass(frozen=True)
class RuleJob:
    name: str
    kind: str
    hardware: str
    engine: str = "buildkite"
    run_if_changed: tuple[str, ...] = ()
    skip_if_only_changed: tuple[str, ...] = ()
    config: str | None = None  # e.g. benchmarks/attention_benchmarks/configs/mla_decode.yaml
    # Restrict the job to the backends the PR touches (the benchmark's --backends).
    per_backend: bool = False
    step_key: str | None = None  # the engine's step that runs it


@dataclass(frozen=True)
class HardwareTarget:
    """The machines the changed code can run on, and why; ``devices`` None: any machine."""

    devices: frozenset[str] | None
    reason: str = ""
    declared: Mapping[str, str] = field(default_factory=dict)  # path -> "X runs only on ..."


def job_device(finding: Mapping[str, object]) -> str:
    """The device a job finding runs on: a smoke step this PR moves runs where the head's
    build puts it (``head_hardware``), every other job on the one it was chosen for."""
    return str(finding.get("head_hardware") or finding.get("hardware") or "")


def hardware_target(
    paths: Sequence[str],
    declared: Mapping[str, tuple[frozenset[str], str] | None],
    *,
    scope: Sequence[str],
    neutral: Sequence[str] = (),
) -> HardwareTarget:
    """The union of what the changed in-scope files declare; None when any declares nothing.

    ``declared`` maps a path to ``(devices, description)``, or None when the file declares no
    hardware (or it cannot be told).
    """
    relevant = [
        path
        for path in paths
        if any(path_matches(path, glob) for glob in scope)
        and not any(path_matches(path, glob) for glob in neutral)
    ]
    if not relevant:
        return HardwareTarget(None, "no backend code changed")
    devices: set[str] = set()
    descriptions: dict[str, str] = {}
    for path in relevant:
        fact = declared.get(path)
        if fact is None:
            return HardwareTarget(None, f"{path} declares no hardware, so any GPU may run it")
        devices |= fact[0]
        descriptions[path] = fact[1]
    reason = "; ".join(dict.fromkeys(descriptions.values()))
    return HardwareTarget(frozenset(devices), reason, descriptions)


def _device_known(device: str | None, device_map: Mapping[str, frozenset[str]]) -> bool:
    return device is not None and any(device in devices for devices in device_map.values())


def select_steps(
    paths: Sequence[str],
    steps: Sequence[CiStep],
    *,
    candidates: Sequence[str],
    mode: MatchMode,
    empty: EmptyMeans,
    target: HardwareTarget,
    gpu_devices: Mapping[str, frozenset[str]],
) -> tuple[list[SelectedJob], list[str]]:
    """Selected smoke steps, and ``key (device)`` for each step the hardware ruled out.

    Reasons are plain text (the report escapes them); the hardware's own reason is the
    target's, said once by the caller.
    """
    selected: list[SelectedJob] = []
    dropped: list[str] = []
    for step in steps:
        # Only the steps rules name are candidates; an `optional` one (never run by the
        # pipeline on its own) is exactly what a bot may ask for.
        if not any(fnmatchcase(step.key, glob) for glob in candidates):
            continue
        # A device the rules do not list as a GPU (cpu-small) is not a GPU job; no device is
        # the pipeline's default 1-GPU queue.
        if step.device is not None and not _device_known(step.device, gpu_devices):
            continue
        evidence = matching_evidence(step, paths, mode=mode, empty=empty)
        if not evidence:
            continue
        device = step.device or "default"
        if (
            target.devices is not None
            and _device_known(step.device, gpu_devices)
            and step.device not in target.devices
        ):
            dropped.append(f"{step.key} ({device})")
            continue
        dependency, path = evidence[0]
        if dependency:
            more = len({p for _, p in evidence}) - 1
            reason = f"{path} is under {dependency}" + (f" (+{more} more)" if more else "")
        else:
            reason = "the step has no source_file_dependencies and rules say that means always"
        selected.append(
            SelectedJob(
                step.label,
                GPU_SMOKE,
                device,
                reason,
                "buildkite",
                step.key,
                parallelism=step.parallelism,
            )
        )
    return selected, dropped


def select_rule_jobs(
    paths: Sequence[str],
    jobs: Sequence[RuleJob],
    *,
    touched_backends: Mapping[str, Sequence[str]] | None = None,
) -> list[SelectedJob]:
    """Rule jobs whose triggers fire, restricted to the touched backends where they ask."""
    selected = []
    for job in jobs:
        if not paths:
            continue
        if job.skip_if_only_changed and all(
            any(path_matches(path, glob) for glob in job.skip_if_only_changed) for path in paths
        ):
            continue
        hits = [p for p in paths if any(path_matches(p, glob) for glob in job.run_if_changed)]
        if job.run_if_changed and not hits:
            continue
        backends: tuple[str, ...] = ()
        if job.per_backend:
            backends = tuple(
                dict.fromkeys(
                    name for path in hits for name in (touched_backends or {}).get(path, ())
                )
            )
            if not backends:
                continue  # a benchmark restricted to no backend measures nothing new
            # The reason names the files of the backends it measures: a sparse benchmark
            # is not run because a dense backend's file changed.
            hits = [path for path in hits if (touched_backends or {}).get(path)]
        reason = f"{hits[0]} changed" if hits else "always"
        if len(hits) > 1:
            reason += f" (+{len(hits) - 1} more)"
        if backends:
            reason += f"; backends {', '.join(backends)}"
        selected.append(
            SelectedJob(
                job.name,
                job.kind,
                job.hardware,
                reason,
                job.engine,
                job.step_key,
                backends,
                job.config,
            )
        )
    return selected
