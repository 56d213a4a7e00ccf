"""``prbot bench run``: one benchmark job, base and head alternately on one GPU.

As vLLM's own performance experiments do it: one pinned GPU, checked idle first; rounds in
ABBA order (round 1 base then head, round 2 head then base, ...) so that a drift over the job
(the card warming up, clocks settling) falls on both sides alike; every run a fresh process
from the side's command template. The GPU's identity, clocks and temperature are recorded at
the start and the end (nvidia-smi), so the verdict can say which GPU it speaks of.

The layout written under ``--out`` is what ``prbot bench compare`` reads::

    base/run-<round>.json  head/run-<round>.json   one vLLM --output-json file per run
    base/machine.csv       head/machine.csv        nvidia-smi at the job's start
    base/machine-end.csv   head/machine-end.csv    ... and at its end
    logs/<side>-<round>.log                        each run's output (the tail kept)
    job.json                                       order, exit codes and seconds per run

Standard library only: the job runs on a GPU agent, where prbot's own dependencies need not
be installed. The command templates are the pipeline's (never the PR's): ``{output}``,
``{round}``, ``{side}`` and ``{gpu}`` (the pinned GPU, for ``docker --gpus device={gpu}``)
are replaced in each argument after the template is split as a
shell would split it; nothing goes through a shell unless the template itself calls one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

SIDES = ("base", "head")
# What machine.csv holds (bot.jobs.gpu_identity reads it; a test keeps the two equal).
GPU_QUERY = "name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu"
LOG_TAIL_BYTES = 20_000
NVIDIA_SMI_TIMEOUT = 30
BUSY_SAMPLES = 3
BUSY_INTERVAL = 0.5


class JobError(Exception):
    """A job that must not run or cannot go on; ``exit_code`` for the CLI."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def abba_order(rounds: int) -> list[tuple[int, str]]:
    """``[(1, base), (1, head), (2, head), (2, base), ...]``: ABBA, one pair per round."""
    order = []
    for number in range(1, rounds + 1):
        first, second = SIDES if number % 2 else SIDES[::-1]
        order += [(number, first), (number, second)]
    return order


def expand(
    template: str, *, output: str, round_number: int, side: str, gpu: str = "0"
) -> list[str]:
    """The argv of one run: the template split like a shell, placeholders replaced."""
    try:
        argv = shlex.split(template)
    except ValueError as exc:
        raise JobError(f"the {side} command template does not split: {exc}") from None
    if not argv:
        raise JobError(f"the {side} command template is empty")
    values = {"{output}": output, "{round}": str(round_number), "{side}": side, "{gpu}": gpu}
    expanded = []
    for arg in argv:
        for placeholder, value in values.items():
            arg = arg.replace(placeholder, value)
        expanded.append(arg)
    return expanded


@dataclass
class Smi:
    """nvidia-smi for one GPU (``-i``), as a small adapter the tests can point elsewhere."""

    executable: str = "nvidia-smi"
    gpu: str = "0"

    def _run(self, *args: str) -> str:
        path = shutil.which(self.executable)
        if path is None:
            raise JobError(
                f"{self.executable} not found: without it the GPU cannot be told or checked "
                "idle, so no benchmark runs",
                3,
            )
        try:
            done = subprocess.run(
                [path, "-i", self.gpu, *args],
                capture_output=True,
                text=True,
                timeout=NVIDIA_SMI_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise JobError(f"nvidia-smi did not answer in {NVIDIA_SMI_TIMEOUT} s", 3) from None
        if done.returncode != 0:
            line = (done.stderr or done.stdout).strip().splitlines()
            raise JobError(
                f"nvidia-smi -i {self.gpu} failed: {line[0][:200] if line else done.returncode}", 3
            )
        return done.stdout

    def identity(self) -> str:
        return self._run(f"--query-gpu={GPU_QUERY}", "--format=csv")

    def utilization(self) -> int | None:
        text = self._run("--query-gpu=utilization.gpu", "--format=csv,noheader,nounits").strip()
        try:
            return int(text.splitlines()[0].strip())
        except (ValueError, IndexError):
            return None  # [N/A]: the card does not say

    def compute_apps(self) -> list[str]:
        text = self._run(
            "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"
        )
        return [line.strip() for line in text.splitlines() if line.strip()]


def busy_reason(
    smi: Smi, *, max_utilization: int, sleep: Callable[[float], None] = time.sleep
) -> str | None:
    """Why the GPU is not idle (a process on it, or load), or None when it is."""
    apps = smi.compute_apps()
    if apps:
        more = f" (+{len(apps) - 1} more)" if len(apps) > 1 else ""
        return f"a process is using it: {apps[0][:120]}{more}"
    for sample in range(BUSY_SAMPLES):
        load = smi.utilization()
        if load is not None and load > max_utilization:
            return f"it is {load}% utilized (at most {max_utilization}% allowed)"
        if sample + 1 < BUSY_SAMPLES:
            sleep(BUSY_INTERVAL)
    return None


@dataclass
class RunRecord:
    round: int
    side: str
    exit_code: int | None
    seconds: float
    output: bool
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "round": self.round,
            "side": self.side,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "output": self.output,
            "note": self.note,
        }


@dataclass
class JobLog:
    rounds: int
    gpu: str
    runs: list[RunRecord] = field(default_factory=list)

    def paired_rounds(self) -> int:
        done = {(r.round, r.side) for r in self.runs if r.output}
        return sum(
            1 for n in range(1, self.rounds + 1) if (n, "base") in done and (n, "head") in done
        )


def _tail(path: Path) -> None:
    """Keep a log's last LOG_TAIL_BYTES: a chatty benchmark must not fill the agent's disk."""
    size = path.stat().st_size
    if size <= LOG_TAIL_BYTES:
        return
    with path.open("rb") as handle:
        handle.seek(size - LOG_TAIL_BYTES)
        tail = handle.read()
    path.write_bytes(b"[...]\n" + tail)


def run_once(
    argv: list[str], *, log: Path, env: Mapping[str, str], timeout: float
) -> tuple[int | None, float, str]:
    started = time.monotonic()
    with log.open("wb") as out:
        try:
            done = subprocess.run(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                timeout=timeout,
                check=False,
            )
            code, note = done.returncode, ""
        except subprocess.TimeoutExpired:
            code, note = None, f"killed after {timeout:.0f} s"
        except OSError as exc:
            code, note = None, f"could not start: {exc.strerror or exc}"
    _tail(log)
    return code, time.monotonic() - started, note


def run_job(
    templates: Mapping[str, str],
    *,
    rounds: int,
    out: Path,
    smi: Smi,
    run_timeout: float = 1800.0,
    max_utilization: int = 10,
    env: Mapping[str, str] | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> JobLog:
    """Check the GPU idle, then run ``rounds`` ABBA rounds into ``out``; the job's log."""
    if rounds < 1:
        raise JobError("--rounds must be at least 1")
    commands = {side: templates[side] for side in SIDES}
    for side, template in commands.items():
        expand(template, output="x", round_number=1, side=side)  # a bad template fails now
    busy = busy_reason(smi, max_utilization=max_utilization)
    if busy:
        raise JobError(f"GPU {smi.gpu} is busy, so nothing was run: {busy}", 3)
    start = smi.identity()
    for side in SIDES:
        (out / side).mkdir(parents=True, exist_ok=True)
        (out / side / "machine.csv").write_text(start)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    child_env = dict(os.environ if env is None else env)
    child_env["CUDA_VISIBLE_DEVICES"] = smi.gpu
    job = JobLog(rounds, smi.gpu)
    for number, side in abba_order(rounds):
        output = (out / side / f"run-{number}.json").resolve()
        output.unlink(missing_ok=True)
        argv = expand(
            commands[side], output=str(output), round_number=number, side=side, gpu=smi.gpu
        )
        run_env = {
            **child_env,
            "PRBOT_BENCH_SIDE": side,
            "PRBOT_BENCH_ROUND": str(number),
            "PRBOT_BENCH_OUTPUT": str(output),
        }
        code, seconds, note = run_once(
            argv, log=out / "logs" / f"{side}-{number}.log", env=run_env, timeout=run_timeout
        )
        wrote = output.is_file() and output.stat().st_size > 0
        if code != 0 and wrote:
            # A run that failed is not a measurement, whatever it left behind.
            output.unlink()
            wrote = False
        if code != 0 and not note:
            note = f"exit code {code}"
        elif code == 0 and not wrote:
            note = "exit code 0 but no results file"
        job.runs.append(RunRecord(number, side, code, seconds, wrote, note))
        progress(f"round {number} {side}: {'ok' if wrote else note} ({seconds:.1f} s)")
    end = smi.identity()
    for side in SIDES:
        (out / side / "machine-end.csv").write_text(end)
    (out / "job.json").write_text(
        json.dumps(
            {
                "rounds": rounds,
                "gpu": smi.gpu,
                "order": [f"{n}{s[0].upper()}" for n, s in abba_order(rounds)],
                "commands": commands,
                "runs": [r.to_json() for r in job.runs],
            },
            indent=1,
        )
    )
    return job
