"""jobs: the GPU smoke tests and kernel benchmarks this PR needs, and on which machines.

Selection is pure (``bot.jobs.selection``): the repository's own Buildkite step files and
the registry are read at the PR's **base** (a PR cannot choose its own jobs by editing
them), the hardware each changed backend declares at its head. Trusted authors' jobs are
*selected*; anyone else's wait for a maintainer's approval of that head SHA. Dispatching to
the CI engine and reading results back happen outside the check, in the jobs handlers.
"""

from __future__ import annotations

import dataclasses
import re
from fnmatch import fnmatchcase
from typing import Any

from bot.checks.base import Check, CheckContext, Section, Status
from bot.core.globs import path_matches
from bot.core.limits import InputRejected
from bot.core.snapshot import Snapshot
from bot.jobs.backends import backends_by_file, registered_backends
from bot.jobs.buildkite_steps import load_steps
from bot.jobs.config import HardwareRules, JobsRules, RegistryRules, RuleJobRules, StepFileRules
from bot.jobs.hardware import Capability, backend_hardware, class_capabilities
from bot.jobs.incumbents import incumbents, priority_list
from bot.jobs.selection import (
    BENCHMARK,
    GPU_SMOKE,
    SelectedJob,
    hardware_target,
    job_device,
    select_rule_jobs,
    select_steps,
)

MAX_STEP_FILES = 200
AWAITING_APPROVAL = "awaiting_approval"
SELECTED = "selected"
# The benchmark step prbot ships for a Buildkite pipeline to copy (in prbot's repository).
BENCHMARK_STEP_FILE = "deploy/gpu-bench/buildkite-step.yaml"


def _missing_steps(findings: list[dict[str, Any]], keys: set[str] | None) -> list[str]:
    """A benchmark whose step the repository's pipeline does not have yet is marked (it is
    never dispatched: the build would have nothing to run) and said as what is needed, naming
    the step file prbot ships for it; the smoke steps come from the pipeline itself, so they
    are reported from its builds anyway."""
    if keys is None:
        return []
    lines = []
    for finding in findings:
        key = finding.get("step_key")
        if finding.get("kind") == BENCHMARK and key and key not in keys:
            finding["missing_step"] = True
            lines.append(
                f"{finding['name']} needs the step `{key}` in the repository's pipeline "
                f"(none of its step files has it): copy prbot's `{BENCHMARK_STEP_FILE}` into "
                f"one of them with its key set to `{key}` and its agents on a "
                f"{finding.get('hardware')} queue; until then it is not dispatched"
            )
    return lines


def _read_steps(tree, rules: StepFileRules) -> tuple[list, list[str]]:  # noqa: ANN001
    prefixes = {glob.split("*", 1)[0].rsplit("/", 1)[0] for glob in rules.files}
    paths = sorted(
        {
            path
            for prefix in prefixes
            for path in tree.list_paths(prefix)
            if any(path_matches(path, glob) for glob in rules.files)
        }
    )
    problems = []
    if len(paths) > MAX_STEP_FILES:
        problems.append(f"{len(paths)} step files; the first {MAX_STEP_FILES} were read")
        paths = paths[:MAX_STEP_FILES]
    texts = []
    for path in paths:
        try:
            texts.append((path, tree.read_text(path) or ""))
        except InputRejected as exc:  # over the size bound: that file is not read, the rest is
            problems.append(str(exc))
    steps, trouble = load_steps(texts)
    return steps, problems + trouble


def _moved_devices(snapshot: Snapshot, rules: StepFileRules, findings: list) -> None:
    """Smoke steps are chosen from the base's step files (a PR cannot choose its own jobs),
    but the build of this head runs the head's pipeline: a selected step whose device this
    PR changes says where it will run (0.23.0 -> 0.26.0 moved an AMD mirror from mi300_1 to
    mi325_1, and the line named only the base's)."""
    keys = {f["step_key"] for f in findings if f["kind"] == GPU_SMOKE and f.get("step_key")}
    if not keys or not any(path_matches(f.path, g) for f in snapshot.files for g in rules.files):
        return  # no step file changed: the head's steps are the base's
    head_steps, _ = _read_steps(snapshot.head, rules)  # its problems are the head's, not ours
    at_head = {step.key: step.device for step in head_steps if step.key in keys}
    for finding in findings:
        key = finding.get("step_key")
        if key not in at_head or finding["kind"] != GPU_SMOKE:
            continue
        device = at_head[key]
        if device and device != finding["hardware"]:
            finding["head_hardware"] = device
            # Plain text: reasons are escaped where they are shown, backticks and all.
            finding["reason"] += (
                f"; this PR moves the step to {device}, where the build of this head runs it"
            )


def _declared_hardware(
    snapshot: Snapshot, rules: HardwareRules, paths: list[str]
) -> tuple[dict[str, tuple[frozenset[str], str] | None], list[str]]:
    known = [Capability.parse(text) for text in rules.capabilities]
    devices_of = {Capability.parse(k): frozenset(v) for k, v in rules.capabilities.items()}
    declared: dict[str, tuple[frozenset[str], str] | None] = {}
    problems: list[str] = []
    for path in paths:
        if not path.endswith(".py") or not any(path_matches(path, g) for g in rules.scope):
            continue
        platform = next(
            (
                (name, rule)
                for name, rule in rules.platforms.items()
                if any(path_matches(path, glob) for glob in rule.paths)
            ),
            None,
        )
        if platform is not None:
            name, rule = platform
            declared[path] = (frozenset(rule.devices), f"{path} is {name} code")
            continue
        text = snapshot.head.read_text(path)
        if text is None:
            declared[path] = None  # removed: its hardware is no one's target
            continue
        found, trouble = backend_hardware(text, path, known)
        problems.extend(trouble)
        if not found:
            declared[path] = None
            continue
        devices = frozenset().union(*(devices_of[cap] for hw in found for cap in hw.capabilities))
        declared[path] = (devices, "; ".join(hw.describe() for hw in found))
    return declared, problems


def _one_name_per_machine(
    selected: list[SelectedJob], capabilities: dict[str, list[str]]
) -> list[SelectedJob]:
    """A rule job's machine under the name the selected smoke steps give it: ``b200`` and
    ``b200-k8s`` are one GPU to the reader (the same capability in the rules)."""
    group_of = {device: cap for cap, devices in capabilities.items() for device in devices}
    smoke_names = {
        group_of[job.hardware]: job.hardware
        for job in selected
        if job.kind == GPU_SMOKE and job.hardware in group_of
    }
    return [
        dataclasses.replace(job, hardware=smoke_names[group_of[job.hardware]])
        if job.kind != GPU_SMOKE
        and smoke_names.get(group_of.get(job.hardware, ""), job.hardware) != job.hardware
        else job
        for job in selected
    ]


def _no_candidate(steps: list, candidates: list[str]) -> list[str]:
    """Said when the step files exist but no step is a candidate: a renamed step, or keys
    the rules no longer match, would otherwise drop every smoke job without a word."""
    if not steps or not candidates:
        return []
    if any(fnmatchcase(step.key, glob) for step in steps for glob in candidates):
        return []
    files = len({step.source for step in steps})
    return [
        f"no step in the {files} step file{'s' if files != 1 else ''} read at base has a key "
        f"matching the candidates ({', '.join(candidates)}), so no smoke step can be chosen"
    ]


def _registered_at(tree, rules: RegistryRules) -> list:  # noqa: ANN001 - a TreeReader
    """The registry's members in one revision (problems are the head's to report)."""
    found = []
    for path in rules.paths:
        text = tree.read_text(path)
        if text is not None:
            found += registered_backends(text, path, rules.enums)[0]
    return found


def _registered(snapshot: Snapshot, rules: RegistryRules) -> tuple[list, list[str]]:
    backends, problems = [], []
    for path in rules.paths:
        text = snapshot.head.read_text(path)
        if text is None:
            continue
        found, trouble = registered_backends(text, path, rules.enums)
        backends.extend(found)
        problems.extend(trouble)
    return backends, problems


def _backend_devices(
    snapshot: Snapshot, rules: HardwareRules, backends: list, wanted: set[str]
) -> tuple[dict[str, frozenset[str] | None], list[str]]:
    """Per registered backend in ``wanted``: the machines its own class can run on, read from
    the class (not the file: one file holds CUDA and SM120 classes), else from the platforms
    whose file names it; None when neither says (then it is never ruled out)."""
    known = [Capability.parse(text) for text in rules.capabilities]
    devices_of = {Capability.parse(k): frozenset(v) for k, v in rules.capabilities.items()}
    every_gpu = frozenset().union(*devices_of.values()) if devices_of else frozenset()
    platform_text = {
        name: snapshot.head.read_text(path) or "" for name, path in rules.platform_files.items()
    }
    out: dict[str, frozenset[str] | None] = {}
    problems: list[str] = []
    classes: dict[str, dict] = {}
    for backend in backends:
        if backend.name not in wanted:
            continue
        module, _, class_name = backend.class_path.rpartition(".")
        path = module.replace(".", "/") + ".py"
        if path not in classes:
            text = snapshot.head.read_text(path)
            found, trouble = class_capabilities(text, path, known) if text else ({}, [])
            classes[path] = found
            problems += trouble
        accepted = classes[path].get(class_name)
        if accepted is not None:
            out[backend.name] = frozenset().union(*(devices_of[c] for c in accepted))
            continue
        mention = re.compile(rf"\b{re.escape(backend.enum)}\.{re.escape(backend.name)}\b")
        platforms = [name for name, text in platform_text.items() if mention.search(text)]
        if not platforms:
            out[backend.name] = None
            continue
        devices: set[str] = set()
        for name in platforms:
            if name == "cuda":
                devices |= every_gpu
            elif name in rules.platforms:
                devices |= set(rules.platforms[name].devices)
        out[backend.name] = frozenset(devices)
    return out, problems


def _enums_in_job(backends: list, rule: RuleJobRules | None) -> dict[str, set[str]]:
    """Per member name, the enums whose entry of it lives in a file that fires the job (a
    prefill benchmark's FLASH_ATTN is MLAPrefillBackendEnum's, not AttentionBackendEnum's)."""
    found: dict[str, set[str]] = {}
    for backend in backends:
        if rule is None or any(path_matches(backend.module_path, g) for g in rule.run_if_changed):
            found.setdefault(backend.name, set()).add(backend.enum)
    return found


def _comparison(
    snapshot: Snapshot,
    job: SelectedJob,
    rule: RuleJobRules | None,
    at_base: set[tuple[str, str]],
    capabilities: dict[str, list[str]],
    enums: dict[str, set[str]],
) -> dict[str, Any]:
    """``compare``: ``base`` (each backend at the merge base and at head), or ``backends`` when
    one is absent at base: new ones against the incumbents on the same head, ``against``."""

    def at_base_too(name: str) -> bool:
        owners = enums.get(name)
        if not owners:  # no entry in a file that fires the job: any enum's
            return any(member == name for _, member in at_base)
        return any((enum, name) in at_base for enum in owners)

    new = [name for name in job.backends if not at_base_too(name)]
    if not new:
        return {"compare": "base", "against": [], "new_backends": []}
    against: list[str] = []
    read = False  # whether a priority list was found to take incumbents from
    major: int | None = None
    if rule is not None and rule.priorities is not None:
        major = next(
            (
                Capability.parse(cap).major
                for cap, devices in capabilities.items()
                if job.hardware in devices
            ),
            None,
        )
        text = snapshot.head.read_text(rule.priorities.file)
        if major is not None and text:
            order = priority_list(
                text,
                rule.priorities.file,
                function=rule.priorities.function,
                flag=rule.priorities.flag,
                major=major,
                enum=rule.priorities.enum,
                prefer=new,
            )
            read = order is not None
            # Only incumbents the config can measure: a sparse backend against sparse ones.
            against = incumbents([n for n in order or [] if rule.measures(n)], new)
    return {
        "compare": "backends",
        "against": against,
        "new_backends": new,
        "priorities_read": read,
        "capability_major": major,
    }


def _no_incumbent_cause(rule: RuleJobRules | None, hardware: str, compared: dict) -> str:
    """Why a new backend has nothing to run against, as far as prbot knows it."""
    if rule is None or rule.priorities is None:
        return "the job's rules name no priority list to take incumbents from"
    where = f"{rule.priorities.file}::{rule.priorities.function}"
    major = compared.get("capability_major")
    if major is None:
        return f"prbot knows no compute capability of {hardware} to read {where} for"
    branch = f"compute capability {major} ({hardware})"
    if not compared.get("priorities_read"):
        return f"prbot found no branch for {branch} in {where} to take incumbents from"
    return f"the branch for {branch} in {where} lists no other backend this job measures"


def _finding(job: SelectedJob, status: str) -> dict[str, Any]:
    return {
        "name": job.name,
        "kind": job.kind,
        "hardware": job.hardware,
        "reason": job.reason,
        "status": status,
        "engine": job.engine,
        "url": None,
        "step_key": job.step_key,
        "backends": list(job.backends),
        "config": job.config,
        **({"parallelism": job.parallelism} if job.parallelism > 1 else {}),
    }


def run(snapshot: Snapshot, rules: JobsRules, context: CheckContext) -> Section:
    if rules.steps is None and not rules.jobs:
        return Section("jobs", Status.SKIP, "no GPU jobs are configured")
    paths = sorted(
        {f.path for f in snapshot.files}
        | {f.previous_path for f in snapshot.files if f.previous_path}
    )
    if not paths:
        return Section("jobs", Status.SKIP, "no changed files")
    problems: list[str] = []
    declared, trouble = _declared_hardware(snapshot, rules.hardware, paths)
    problems += trouble
    target = hardware_target(
        paths, declared, scope=rules.hardware.scope, neutral=rules.hardware.neutral
    )
    selected: list[SelectedJob] = []
    dropped: list[str] = []
    unmatched: list[str] = []
    pipeline_keys: set[str] | None = None  # the keys the repository's step files define
    if rules.steps is not None:
        steps, trouble = _read_steps(snapshot.base, rules.steps)
        pipeline_keys = {step.key for step in steps}
        problems += trouble
        unmatched = _no_candidate(steps, rules.steps.candidates)
        problems += unmatched
        gpu_devices = {k: frozenset(v) for k, v in rules.hardware.capabilities.items()}
        for name, platform in rules.hardware.platforms.items():
            gpu_devices[name] = frozenset(platform.devices)
        selected, dropped = select_steps(
            paths,
            steps,
            candidates=rules.steps.candidates,
            mode=rules.steps.match,
            empty=rules.steps.empty_dependencies,
            target=target,
            gpu_devices=gpu_devices,
        )
    registered, trouble = _registered(snapshot, rules.registry)
    problems += trouble
    touched = backends_by_file(registered)
    names = {name for path in paths for name in touched.get(path, [])}
    runs_on, trouble = _backend_devices(snapshot, rules.hardware, registered, names)
    problems += trouble
    for job in rules.jobs:
        # A benchmark on one machine measures only the backends whose class can run there;
        # a class that says nothing falls back on what its file declares (platform paths).
        def can_run(path: str, name: str, rule: RuleJobRules = job) -> bool:
            hardware = rule.hardware
            devices = runs_on.get(name)
            if devices is None and declared.get(path) is not None:
                devices = declared[path][0]  # type: ignore[index]
            return (devices is None or hardware in devices) and rule.measures(name)

        runnable = {
            path: [name for name in names if can_run(path, name)] for path, names in touched.items()
        }
        selected += select_rule_jobs(paths, [job.to_rule_job()], touched_backends=runnable)
    selected = _one_name_per_machine(selected, rules.hardware.capabilities)
    if not selected:
        # A skipped section has no fold: a problem reading the inputs must warn to be seen.
        summary = f"no GPU job chosen: {unmatched[0]}" if unmatched else "no GPU job needed"
        if problems and not unmatched:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            summary += f"; {problems[0]}{more}"
        return Section(
            "jobs",
            Status.WARN if problems else Status.SKIP,
            summary,
            data={"dropped": dropped, "problems": problems, "target": target.reason},
        )
    status = SELECTED if snapshot.trusted else AWAITING_APPROVAL
    findings = [_finding(job, status) for job in selected]
    if any(job.kind == BENCHMARK and job.backends for job in selected):
        # A member is at base when its own enum has it there: vLLM 0.21.0's new prefill
        # registry has FLASH_ATTN, which the attention enum had long before.
        at_base = {(b.enum, b.name) for b in _registered_at(snapshot.base, rules.registry)}
        by_name = {rule.name: rule for rule in rules.jobs}
        for job, finding in zip(selected, findings, strict=True):
            if job.kind == BENCHMARK and job.backends:
                rule = by_name.get(job.name)
                enums = _enums_in_job(registered, rule)
                compared = _comparison(
                    snapshot, job, rule, at_base, rules.hardware.capabilities, enums
                )
                finding.update(compared)
                if compared["compare"] == "backends":
                    new = ", ".join(compared["new_backends"])
                    if compared["against"]:
                        finding["reason"] += (
                            f"; {new} not at base: measured against "
                            + ", ".join(compared["against"])
                            + " on this head"
                        )
                    else:
                        # Nothing to run it against: the job would compare it with itself.
                        finding["no_incumbents"] = True
                        finding["reason"] += f"; {new} not at base, and no incumbents"
                        problems.append(
                            f"{job.name} is not dispatched: {new} "
                            + ("are" if len(compared["new_backends"]) > 1 else "is")
                            + " not at base and "
                            + _no_incumbent_cause(rule, job.hardware, compared)
                            + ", so there is nothing to benchmark it against"
                        )
    problems += _missing_steps(findings, pipeline_keys)
    if rules.steps is not None:
        _moved_devices(snapshot, rules.steps, findings)
    smoke = sum(job.kind == GPU_SMOKE for job in selected)
    benchmarks = sum(job.kind == BENCHMARK for job in selected)
    counts = ", ".join(
        part
        for part in (
            f"{smoke} smoke test{'s' if smoke != 1 else ''}" if smoke else "",
            f"{benchmarks} benchmark{'s' if benchmarks != 1 else ''}" if benchmarks else "",
        )
        if part
    )
    machines = ", ".join(dict.fromkeys(job_device(f) for f in findings))
    if status == AWAITING_APPROVAL:
        summary = f"{counts} on {machines}, awaiting a maintainer's approval of this head"
        section_status = Status.WARN
    else:
        summary = f"{counts} selected on {machines}"
        section_status = Status.PASS
    return Section(
        "jobs",
        section_status,
        summary,
        findings,
        data={
            "dropped": dropped,
            "problems": problems,
            "target": target.reason if target.devices is not None else "",
        },
    )


CHECK = Check(
    name="jobs",
    title="GPU jobs",
    run=run,
    rules_model=JobsRules,
    order=60,
    template="checks/jobs.md.j2",
)
