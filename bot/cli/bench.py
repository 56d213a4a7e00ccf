"""``prbot bench run`` and ``prbot bench compare``: one paired benchmark job and its verdicts.

``run`` executes the job on a GPU agent (``bot.local.bench_job``); ``compare`` reads the two
directories it wrote (or any in that layout) and prints the verdicts, as JSON or Markdown.
``run`` needs only the standard library: a GPU agent needs nothing installed but Python and
prbot's source to run a job (its closing table needs markupsafe, and is skipped without).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bot.cli.common import CliError, progress
from bot.jobs.compare import DEFAULT_ALPHA, DEFAULT_FACTOR, DEFAULT_ROUNDS

MAX_DIR_ENTRIES = 1000


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="run one paired benchmark job on a GPU, or compare its runs"
    )
    commands = parser.add_subparsers(dest="bench_command", required=True, metavar="ACTION")
    run = commands.add_parser(
        "run",
        help="run base and head alternately (ABBA) on one idle GPU, a fresh process each",
        description=(
            "Each template is split like a shell command; {output} (the results JSON to "
            "write), {round}, {side} and {gpu} are replaced in every argument."
        ),
    )
    run.add_argument("--base", required=True, metavar="TEMPLATE", help="base side's command")
    run.add_argument("--head", required=True, metavar="TEMPLATE", help="head side's command")
    run.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"ABBA rounds (default {DEFAULT_ROUNDS}, checks.jobs.benchmark.runs)",
    )
    run.add_argument("--out", required=True, help="directory for base/, head/, logs/, job.json")
    run.add_argument(
        "--gpu",
        help="the GPU to pin (index or uuid; default: CUDA_VISIBLE_DEVICES if it names one, "
        "else 0)",
    )
    run.add_argument("--run-timeout", type=float, default=1800.0, help="seconds per run")
    run.add_argument(
        "--max-utilization", type=int, default=10, help="busier than this (%%) at start: refuse"
    )
    run.add_argument("--nvidia-smi", default="nvidia-smi", help="the nvidia-smi to ask")
    run.set_defaults(func=run_command)
    compare = commands.add_parser(
        "compare", help="verdicts for BASE_DIR and HEAD_DIR of run-<round>.json files"
    )
    compare.add_argument("base_dir")
    compare.add_argument("head_dir")
    compare.add_argument("--format", choices=["json", "markdown"], default="json")
    compare.add_argument(
        "--factor",
        type=float,
        default=DEFAULT_FACTOR,
        help=f"smallest change called a change (default {DEFAULT_FACTOR})",
    )
    compare.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"false-discovery rate (default {DEFAULT_ALPHA})",
    )
    compare.add_argument(
        "--allow-different-gpus",
        action="store_true",
        help="compare runs from two GPUs (different uuids) instead of calling them inconclusive",
    )
    compare.add_argument(
        "--by",
        choices=["config", "batch_spec"],
        default="config",
        help="pair configurations by backend and batch spec (the same backend at base and "
        "head), or by batch spec alone (a new backend against an incumbent)",
    )
    compare.set_defaults(func=compare_command)


def _default_gpu() -> str:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return visible if visible and "," not in visible else "0"


def run_command(args: argparse.Namespace) -> int:
    from bot.local.bench_job import JobError, Smi, run_job

    out = Path(args.out)
    smi = Smi(args.nvidia_smi, args.gpu or _default_gpu())
    try:
        job = run_job(
            {"base": args.base, "head": args.head},
            rounds=args.rounds,
            out=out,
            smi=smi,
            run_timeout=args.run_timeout,
            max_utilization=args.max_utilization,
            progress=progress,
        )
    except JobError as exc:
        raise CliError(str(exc), exc.exit_code) from None
    except OSError as exc:
        raise CliError(f"cannot write under {out}: {exc.strerror or exc}") from None
    paired = job.paired_rounds()
    progress(f"{paired} of {job.rounds} rounds have both runs; results under {out}")
    try:
        from bot.jobs.bench_markdown import markdown
    except ImportError:  # a bare agent without prbot's dependencies: the files are the result
        print(f"prbot bench compare {out / 'base'} {out / 'head'} --format markdown")
    else:
        print(markdown(verdicts_of(out / "base", out / "head")), end="")
    if paired == 0:
        raise CliError("no round produced both a base and a head result", 1)
    return 0


def read_side(directory: Path, side_name: str):
    """One side's files, bounded: at most MAX_DIR_ENTRIES names, each read to its limit + 1
    (so that its parser can say it is too large)."""
    from bot.jobs.benchmark_results import MAX_RESULT_BYTES
    from bot.jobs.gpu_identity import MAX_CSV_BYTES
    from bot.jobs.paired_runs import MACHINE_END_NAME, MACHINE_NAME, RUN_NAME, Side

    if not directory.is_dir():
        raise CliError(f"{directory}: not a directory")
    side = Side()
    try:
        with os.scandir(directory) as entries:
            names = []
            for entry in entries:
                if len(names) >= MAX_DIR_ENTRIES:
                    side.problems.append(
                        f"{side_name}: over {MAX_DIR_ENTRIES} entries; the rest unread"
                    )
                    break
                names.append(entry.name)
    except OSError as exc:
        raise CliError(f"{directory}: cannot list ({exc.strerror or exc})") from None
    limits = {MACHINE_NAME: MAX_CSV_BYTES, MACHINE_END_NAME: MAX_CSV_BYTES}
    for file_name in sorted(names):
        limit = limits.get(file_name, MAX_RESULT_BYTES if RUN_NAME.match(file_name) else None)
        if limit is None:
            continue
        path = directory / file_name
        try:
            if not path.is_file():
                side.problems.append(f"{side_name}/{file_name}: not a regular file")
                continue
            with path.open("rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            side.problems.append(f"{side_name}/{file_name}: unreadable ({exc.strerror or exc})")
            continue
        side.add(file_name, data, side_name)
    return side


def verdicts_of(
    base_dir: Path,
    head_dir: Path,
    *,
    factor: float = DEFAULT_FACTOR,
    alpha: float = DEFAULT_ALPHA,
    allow_different_gpus: bool = False,
    by: str = "config",
):
    from bot.jobs.benchmark_results import NAMING
    from bot.jobs.paired_runs import BY_BATCH_SPEC, verdicts

    return verdicts(
        read_side(base_dir, "base"),
        read_side(head_dir, "head"),
        factor=factor,
        alpha=alpha,
        allow_different_gpus=allow_different_gpus,
        naming=BY_BATCH_SPEC if by == "batch_spec" else NAMING,
    )


def compare_command(args: argparse.Namespace) -> int:
    if not 0 < args.factor < 1:
        raise CliError("--factor must be between 0 and 1 (0.05 is 5%)")
    if not 0 < args.alpha < 0.5:
        raise CliError("--alpha must be between 0 and 0.5")
    result = verdicts_of(
        Path(args.base_dir),
        Path(args.head_dir),
        factor=args.factor,
        alpha=args.alpha,
        allow_different_gpus=args.allow_different_gpus,
        by=args.by,
    )
    if args.format == "json":
        json.dump([c.to_json() for c in result.comparisons], sys.stdout, indent=2)
        print()
        for problem in result.problems:
            progress(problem)
    else:
        from bot.jobs.bench_markdown import markdown

        print(markdown(result), end="")
    return 0
