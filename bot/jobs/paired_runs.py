"""One benchmark job's two directories of runs as verdicts: ``prbot bench compare``'s logic.

Each side (``base/``, ``head/``) holds one vLLM ``--output-json`` file per run, named
``run-<round>.json``, and may hold ``machine.csv`` (nvidia-smi at the job's start). Runs with
the same round number ran back to back in one job, so they are compared as pairs. Every
problem of the input (a file that is not JSON, a NaN, a missing configuration, one round, a
machine.csv that does not parse, two different GPUs) ends as a ``failed`` or
``inconclusive`` verdict with its reason; nothing here raises on bad input.

Pure: the files come in as bytes (read, bounded, by the CLI or from the engine's artifacts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bot.jobs.benchmark_results import NAMING, ResultError, backends_by_label, parse_results
from bot.jobs.compare import (
    DEFAULT_ALPHA,
    DEFAULT_FACTOR,
    FAILED,
    Comparison,
    compare,
    compare_paired,
    withhold,
)
from bot.jobs.gpu_identity import MAX_CSV_BYTES, Gpu, MachineError, parse_machine_csv, same_gpus

RUN_NAME = re.compile(r"^run-(\d{1,6})\.json$")
MACHINE_NAME = "machine.csv"
MACHINE_END_NAME = "machine-end.csv"
MAX_ROUNDS = 100
MAX_CONFIGS = 500
BY_BATCH_SPEC = ("batch_spec",)
SIDES = ("base", "head")


@dataclass
class Side:
    """One side's files: ``{round: bytes}``, the machine files, and what could not be read."""

    runs: dict[int, bytes] = field(default_factory=dict)
    machine: bytes | None = None
    machine_end: bytes | None = None
    problems: list[str] = field(default_factory=list)

    def add(self, name: str, data: bytes, side: str) -> None:
        """File ``name`` (a bare file name) of this side; unknown names are noted, not read."""
        match = RUN_NAME.match(name)
        if match:
            if len(self.runs) >= MAX_ROUNDS:
                self.problems.append(f"{side}/{name}: past {MAX_ROUNDS} rounds, not read")
                return
            self.runs[int(match.group(1))] = data
        elif name == MACHINE_NAME:
            self.machine = data
        elif name == MACHINE_END_NAME:
            self.machine_end = data


def sides_from_files(files: Iterable[tuple[str, bytes]]) -> dict[str, Side]:
    """Artifacts named ``base/run-1.json``, ``head/machine.csv`` (any leading folders)."""
    sides = {side: Side() for side in SIDES}
    for path, data in files:
        parts = path.replace("\\", "/").split("/")
        if len(parts) >= 2 and parts[-2] in sides:
            sides[parts[-2]].add(parts[-1], data, parts[-2])
    return sides


@dataclass
class Verdicts:
    comparisons: list[Comparison]
    problems: list[str]
    gpus: dict[str, list[Gpu]]  # side -> the GPUs its machine.csv lists
    gpus_end: dict[str, list[Gpu]]
    backends: dict[str, list[str]]  # side -> the backends its runs timed
    rounds: int  # rounds with a readable run on both sides

    def to_json(self) -> dict[str, object]:
        return {
            "comparisons": [c.to_json() for c in self.comparisons],
            "problems": self.problems,
            "gpus": {s: [g.to_json() for g in gpus] for s, gpus in self.gpus.items()},
            "gpus_end": {s: [g.to_json() for g in gpus] for s, gpus in self.gpus_end.items()},
            "backends": self.backends,
            "rounds": self.rounds,
        }


def _read_runs(
    side: Side, name: str, naming: tuple[str, ...], problems: list[str]
) -> tuple[dict[int, dict[str, float]], list[str]]:
    # Only a side's own (reader's) problems and its files' are added here.
    runs: dict[int, dict[str, float]] = {}
    backends: list[str] = []
    problems.extend(side.problems)
    for number in sorted(side.runs):
        source = f"{name}/run-{number}.json"
        data = side.runs[number]
        try:
            run = parse_results(data, source, naming)
            backends.extend(b for b in backends_by_label(data, source, naming).values())
        except ResultError as exc:
            problems.append(str(exc))
            continue
        if not run:
            problems.append(f"{source}: no configurations in it")
            continue
        if len(run) > MAX_CONFIGS:
            problems.append(f"{source}: {len(run)} configurations; the first {MAX_CONFIGS} kept")
            run = dict(list(run.items())[:MAX_CONFIGS])
        runs[number] = run
    return runs, sorted(set(backends))


def _machines(
    side: Side, name: str, problems: list[str]
) -> tuple[list[Gpu] | None, str | None, list[Gpu]]:
    """(GPUs or None, the reason they cannot be told, GPUs at the end)."""
    end: list[Gpu] = []
    if side.machine_end is not None:
        try:
            end = parse_machine_csv(side.machine_end, f"{name}/{MACHINE_END_NAME}")
        except MachineError as exc:
            problems.append(str(exc))
    if side.machine is None:
        return None, None, end
    try:
        return parse_machine_csv(side.machine, f"{name}/{MACHINE_NAME}"), None, end
    except MachineError as exc:
        return None, str(exc), end


def _gpu_reason(
    base: tuple[list[Gpu] | None, str | None],
    head: tuple[list[Gpu] | None, str | None],
    allow_different_gpus: bool,
) -> tuple[str | None, str]:
    """(why the runs must not be compared, or None; a note for every reason)."""
    (base_gpus, base_error), (head_gpus, head_error) = base, head
    error = base_error or head_error
    if error:
        return f"the GPU cannot be told ({error})", ""
    if base_gpus is None and head_gpus is None:
        return None, "GPU not recorded"
    if base_gpus is None or head_gpus is None:
        missing = "base" if base_gpus is None else "head"
        return f"{missing} has no {MACHINE_NAME}, so the two GPUs cannot be told the same", ""
    if same_gpus(base_gpus, head_gpus):
        return None, ""
    described = (
        f"base ran on {', '.join(g.describe() for g in base_gpus)}, "
        f"head on {', '.join(g.describe() for g in head_gpus)}"
    )
    if allow_different_gpus:
        return None, f"{described}, compared unpaired (the rules allow different GPUs)"
    return f"{described}: different GPUs are not compared", ""


def parse_sides(base: Side, head: Side, *, naming: tuple[str, ...] = NAMING) -> dict:
    """The two sides' files read into plain JSON data (what a job record keeps): per side the
    runs by round (``{"1": {label: time}}``), the machine files as text, the backends; and
    every problem met. ``judge`` gives the verdicts from it."""
    problems: list[str] = []
    parsed: dict = {"naming": list(naming), "problems": problems}
    for name, side in (("base", base), ("head", head)):
        runs, backends = _read_runs(side, name, naming, problems)
        parsed[name] = {
            "runs": {str(n): run for n, run in runs.items()},
            "backends": backends,
            "machine": _text(side.machine),
            "machine_end": _text(side.machine_end),
        }
    return parsed


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    return data.decode("utf-8", errors="replace")[: MAX_CSV_BYTES + 1]


def verdicts(
    base: Side,
    head: Side,
    *,
    factor: float = DEFAULT_FACTOR,
    alpha: float = DEFAULT_ALPHA,
    allow_different_gpus: bool = False,
    naming: tuple[str, ...] = NAMING,
) -> Verdicts:
    """The verdicts of one job's base and head runs, paired by round."""
    return judge(
        parse_sides(base, head, naming=naming),
        factor=factor,
        alpha=alpha,
        allow_different_gpus=allow_different_gpus,
    )


def _runs_of(parsed: dict, side: str) -> dict[int, dict[str, float]]:
    runs = (parsed.get(side) or {}).get("runs") or {}
    return {int(n): dict(run) for n, run in runs.items() if str(n).isdigit()}


def judge(
    parsed: dict,
    *,
    factor: float = DEFAULT_FACTOR,
    alpha: float = DEFAULT_ALPHA,
    allow_different_gpus: bool = False,
) -> Verdicts:
    """The verdicts of ``parse_sides``'s data, with the rules' thresholds."""
    problems = list(parsed.get("problems") or [])
    base_runs, head_runs = _runs_of(parsed, "base"), _runs_of(parsed, "head")
    base_backends = list((parsed.get("base") or {}).get("backends") or [])
    head_backends = list((parsed.get("head") or {}).get("backends") or [])
    machines = {}
    for name in SIDES:
        data = parsed.get(name) or {}
        side = Side(
            machine=None if data.get("machine") is None else str(data["machine"]).encode(),
            machine_end=(
                None if data.get("machine_end") is None else str(data["machine_end"]).encode()
            ),
        )
        machines[name] = _machines(side, name, problems)
    base_machine, head_machine = machines["base"], machines["head"]
    gpus = {
        side: machine[0]
        for side, machine in (("base", base_machine), ("head", head_machine))
        if machine[0]
    }
    gpus_end = {
        side: machine[2]
        for side, machine in (("base", base_machine), ("head", head_machine))
        if machine[2]
    }
    backends = {"base": base_backends, "head": head_backends}
    both = sorted(set(base_runs) & set(head_runs))
    for side, runs, other in (("base", base_runs, head_runs), ("head", head_runs, base_runs)):
        alone = sorted(set(runs) - set(other))
        if alone:
            shown = ", ".join(str(n) for n in alone[:5])
            problems.append(f"rounds {shown} have a {side} run and no partner; left out")
    if not base_runs or not head_runs:
        side = "base" if not base_runs else "head"
        why = next((p for p in problems if p.startswith(f"{side}/")), "no run-<round>.json")
        comparison = Comparison(
            "(all)",
            None,
            None,
            None,
            None,
            None,
            FAILED,
            None,
            (len(base_runs), len(head_runs)),
            f"no {side} results could be read ({why})",
            None,
            True,
        )
        return Verdicts([comparison], problems, gpus, gpus_end, backends, 0)
    labels: list[str] = []
    for number in both:
        for run in (base_runs[number], head_runs[number]):
            labels.extend(label for label in run if label not in labels)
    rounds: dict[str, dict[int, tuple[float | None, float | None]]] = {
        label: {
            number: (base_runs[number].get(label), head_runs[number].get(label)) for number in both
        }
        for label in labels[:MAX_CONFIGS]
    }
    withheld, note = _gpu_reason(base_machine[:2], head_machine[:2], allow_different_gpus)
    if note.endswith("(the rules allow different GPUs)"):
        # Two GPUs means two jobs: their rounds were never run back to back, so there are
        # no pairs, only two samples.
        samples = {
            label: (
                [base_runs[n].get(label) for n in sorted(base_runs)],
                [head_runs[n].get(label) for n in sorted(head_runs)],
            )
            for label in rounds
        }
        comparisons = compare(samples, factor=factor, alpha=alpha, note=note)
        return Verdicts(comparisons, problems, gpus, gpus_end, backends, len(both))
    comparisons = compare_paired(rounds, factor=factor, alpha=alpha, note=note)
    if withheld:
        comparisons = withhold(comparisons, withheld)
    return Verdicts(comparisons, problems, gpus, gpus_end, backends, len(both))


def sides_summary(result: Verdicts) -> Mapping[str, str]:
    """What ran on each side, in words: ``{"base": "FLASH_ATTN on NVIDIA H200 GPU-5f0c"}``."""
    out = {}
    for side in SIDES:
        what = ", ".join(result.backends.get(side) or []) or "?"
        gpus = result.gpus.get(side)
        where = ", ".join(g.describe() for g in gpus) if gpus else "an unrecorded GPU"
        out[side] = f"{what} on {where}"
    return out
