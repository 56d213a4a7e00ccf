"""A repository's own Buildkite step files, read as its pipeline generator reads them.

vLLM keeps its steps in ``.buildkite/test_areas/*.yaml`` (``group``, ``depends_on``,
``steps``), expanded into a pipeline by vllm-project/ci-infra's generator. Each step has a
``key``, ``label``, ``device`` and ``source_file_dependencies``; ``optional`` steps never run
on their own; ``mirror.<hardware>`` adds a step for other hardware whose dependencies are the
parent's plus its own. Two readings of the dependencies exist and rules choose:

- ``match: prefix`` (the current generator): a path matches a dependency when it *is* the
  dependency or lies under it at a ``/`` boundary; ``!dep`` excludes; an empty list matches
  nothing;
- ``match: substring`` (the older ``test-pipeline.yaml``): the dependency appears anywhere in
  the path, and an empty list means the step always runs.

Nothing here is run: the files are parsed as data, with a size bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import yaml

from bot.core.bounded_yaml import YamlRejected, load_bounded
from bot.core.limits import MAX_YAML_BYTES, InputRejected, check_size

MatchMode = Literal["prefix", "substring"]
EmptyMeans = Literal["nothing", "always"]
# More jobs than one step of a real pipeline runs; a larger value is read as not sharded.
MAX_PARALLELISM = 1000


@dataclass(frozen=True)
class CiStep:
    key: str
    label: str
    device: str | None
    dependencies: tuple[str, ...]
    optional: bool
    source: str  # the step file it came from
    group: str | None = None
    mirror_of: str | None = None  # the parent step's key, for a mirrored step
    hardware: str | None = None  # the mirror's hardware name ("amd"), None for the parent
    # Buildkite's ``parallelism``: how many jobs (shards) the step runs as; 1 when not set.
    parallelism: int = 1


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(item) for item in value if isinstance(item, str | int | float))
    return ()


def generated_key(label: str) -> str:
    """The key vLLM's pipeline generator (vllm-project/ci-infra, ``_generate_step_key``) gives
    a step whose file has none: ``V1 attention (B200)`` is ``v1-attention-b200``."""
    key = label.replace(" ", "-").lower()
    for dropped in "()%":
        key = key.replace(dropped, "")
    for dashed in ",+:./":
        key = key.replace(dashed, "-")
    return key


def _parallelism(value: object) -> int:
    """Buildkite's ``parallelism`` as a count of jobs, 1 for anything that is not one."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return 1
    try:
        count = int(value)
    except ValueError:
        return 1
    return count if 1 < count <= MAX_PARALLELISM else 1


def _step(data: dict, source: str, group: str | None) -> CiStep | None:
    label = str(data.get("label") or "")
    key = str(data.get("key") or "")
    if not (key or label) or "block" in data or "wait" in data:
        return None
    return CiStep(
        key=key or generated_key(label),
        label=label or key,
        device=str(data["device"]) if data.get("device") else None,
        dependencies=_strings(data.get("source_file_dependencies")),
        optional=bool(data.get("optional", False)),
        source=source,
        group=group,
        parallelism=_parallelism(data.get("parallelism")),
    )


def parse_step_file(text: str, source: str) -> tuple[list[CiStep], list[str]]:
    """The steps of one file (mirrors included) and problems; a bad file is a problem."""
    try:
        check_size(source, text, MAX_YAML_BYTES, "a CI step file")
        data, _ = load_bounded(text)
    except InputRejected as exc:
        return [], [str(exc)]
    except YamlRejected as exc:
        return [], [f"`{source}` is not read: {exc}"]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        return [], [f"`{source}` is not valid YAML{where}"]
    except RecursionError:
        return [], [f"`{source}` is nested too deeply to read"]
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        return [], [f"`{source}` has no `steps` list"]
    group = str(data["group"]) if data.get("group") else None
    steps: list[CiStep] = []
    for raw in data["steps"]:
        if not isinstance(raw, dict):
            continue
        # The older pipeline nests steps in group entries of its own.
        nested = raw.get("steps") if isinstance(raw.get("steps"), list) else None
        for item in nested if nested is not None else [raw]:
            if not isinstance(item, dict):
                continue
            step = _step(item, source, str(raw.get("group") or group or "") or None)
            if step is None:
                continue
            steps.append(step)
            mirrors = item.get("mirror")
            for hardware, mirror in mirrors.items() if isinstance(mirrors, dict) else []:
                if not isinstance(mirror, dict):
                    continue
                extra = _strings(mirror.get("source_file_dependencies"))
                steps.append(
                    CiStep(
                        key=str(mirror.get("key") or f"{step.key}-{hardware}"),
                        label=str(mirror.get("label") or f"{step.label} ({hardware})"),
                        device=str(mirror["device"]) if mirror.get("device") else None,
                        dependencies=step.dependencies
                        + tuple(dep for dep in extra if dep not in step.dependencies),
                        optional=bool(mirror.get("optional", step.optional)),
                        source=source,
                        group=step.group,
                        mirror_of=step.key,
                        hardware=str(hardware),
                        parallelism=_parallelism(mirror.get("parallelism", step.parallelism)),
                    )
                )
    return steps, []


def dependency_matches(dependency: str, path: str, mode: MatchMode) -> bool:
    if mode == "substring":
        return bool(dependency) and dependency in path
    prefix = dependency.rstrip("/")
    return bool(prefix) and (path == prefix or path.startswith(prefix + "/"))


def matching_evidence(
    step: CiStep, paths: Sequence[str], *, mode: MatchMode, empty: EmptyMeans
) -> list[tuple[str, str]]:
    """``(dependency, path)`` pairs that select ``step``; empty when it is not selected.

    An empty dependency list selects the step only when rules say empty means always
    (``("", "")`` is then the evidence).
    """
    includes = [dep for dep in step.dependencies if not dep.startswith("!")]
    excludes = [dep[1:] for dep in step.dependencies if dep.startswith("!")]
    if not includes:
        return [("", "")] if empty == "always" and not excludes else []
    evidence = []
    for path in paths:
        if any(dependency_matches(dep, path, mode) for dep in excludes):
            continue
        for dep in includes:
            if dependency_matches(dep, path, mode):
                evidence.append((dep, path))
                break
    return evidence


def load_steps(files: Iterable[tuple[str, str]]) -> tuple[list[CiStep], list[str]]:
    """Steps from ``(path, text)`` pairs, in order, with every file's problems."""
    steps: list[CiStep] = []
    problems: list[str] = []
    for path, text in files:
        found, trouble = parse_step_file(text, path)
        steps.extend(found)
        problems.extend(trouble)
    return steps, problems
