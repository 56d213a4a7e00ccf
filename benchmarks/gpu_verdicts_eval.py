# ruff: noqa: E501  (the Markdown lines it writes are long)
"""How the paired benchmark verdicts fare on real H200 runs: false flags, detection, machines.

Input: directories that ``prbot bench run`` wrote on the GPU (``<job>/base/run-<r>.json``,
``<job>/head/run-<r>.json``, ``machine.csv``), found under ``--runs`` and named by scenario:
``same`` (identical code on both sides), ``slow5`` / ``slow10`` (head has a planted 5% / 10%
slowdown: extra GPU work inside the timed region, ``gpu_attention_bench.py --slowdown``).
Rounds of all jobs of one scenario on one GPU are pooled; each draw picks ``--rounds`` of them
(the rules' default) at random and runs them through the verdict code prbot uses
(``bot.jobs.paired_runs.verdicts``).

Measured:

- false flags: draws of identical code where any configuration came out a regression or an
  improvement (target <= 1%), with how many said ``unchanged`` and ``inconclusive``;
- detection: on configurations quieter than 2% (run-to-run spread of one side's times over all
  identical-code rounds of that GPU), the share of (draw, configuration) called a regression;
- across machines: identical code with base from one GPU and head from another, (a) as prbot
  does by default (different uuids: inconclusive), (b) unpaired when the rules allow it, and
  (c) a same-GPU draw whose head uuid is rewritten (the simulation);
- the old design: the same identical-code rounds compared unpaired (as two builds would be).

    uv run python benchmarks/gpu_verdicts_eval.py --runs /work/gpu-runs --out docs/benchmarks/gpu_verdicts.md
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.jobs.benchmark_results import parse_results  # noqa: E402
from bot.jobs.compare import IMPROVEMENT, INCONCLUSIVE, REGRESSION, UNCHANGED, compare  # noqa: E402
from bot.jobs.gpu_identity import parse_machine_csv  # noqa: E402
from bot.jobs.paired_runs import RUN_NAME, Side, verdicts  # noqa: E402

SCENARIOS = ("same", "slow5", "slow10")


class Round:
    def __init__(self, job: Path, number: int, base: bytes, head: bytes, machine: bytes) -> None:
        self.job, self.number, self.base, self.head, self.machine = job, number, base, head, machine


def load(root: Path) -> dict[tuple[str, str], list[Round]]:
    """(scenario, GPU uuid) -> rounds, from every job directory under ``root``."""
    pools: dict[tuple[str, str], list[Round]] = defaultdict(list)
    for job in sorted(p.parent for p in root.rglob("job.json")):
        if job.name not in SCENARIOS:
            continue
        machine = (job / "base" / "machine.csv").read_bytes()
        uuid = parse_machine_csv(machine)[0].uuid
        for path in sorted((job / "base").iterdir()):
            match = RUN_NAME.match(path.name)
            partner = job / "head" / path.name
            if match and partner.is_file():
                pools[(job.name, uuid)].append(
                    Round(
                        job, int(match.group(1)), path.read_bytes(), partner.read_bytes(), machine
                    )
                )
    return pools


def sides(rounds: list[Round], head_machine: bytes | None = None) -> tuple[Side, Side]:
    base, head = Side(), Side()
    for number, r in enumerate(rounds, start=1):
        base.runs[number], head.runs[number] = r.base, r.head
    base.machine = rounds[0].machine
    head.machine = head_machine if head_machine is not None else rounds[0].machine
    return base, head


def quiet_configs(rounds: list[Round], limit: float = 0.02) -> tuple[set[str], dict[str, float]]:
    """Configurations whose base times vary less than ``limit`` (sd of log) across rounds."""
    times: dict[str, list[float]] = defaultdict(list)
    for r in rounds:
        for label, value in parse_results(r.base).items():
            if math.isfinite(value) and value > 0:
                times[label].append(math.log(value))
    spread = {label: statistics.stdev(v) for label, v in times.items() if len(v) > 2}
    return {label for label, s in spread.items() if s < limit}, spread


def draw_stats(pool: list[Round], draws: int, k: int, rng: random.Random, **kwargs) -> dict:
    counts: dict[str, int] = defaultdict(int)
    flagged_draws = 0
    wide_unchanged = 0
    per_config: dict[str, list[str]] = defaultdict(list)
    head_machine = kwargs.pop("head_machine", None)
    for _ in range(draws):
        chosen = rng.sample(pool, k)
        result = verdicts(*sides(chosen, head_machine), **kwargs)
        flagged = False
        for c in result.comparisons:
            counts[c.verdict] += 1
            per_config[c.config].append(c.verdict)
            if c.verdict in (REGRESSION, IMPROVEMENT):
                flagged = True
            if c.verdict == UNCHANGED and c.low is not None and c.high is not None:
                if c.low < 1 / 1.05 or c.high > 1.05:
                    wide_unchanged += 1
        flagged_draws += flagged
    return {
        "counts": dict(counts),
        "flagged_draws": flagged_draws,
        "wide_unchanged": wide_unchanged,
        "per_config": per_config,
    }


def unpaired_false_flags(
    base_pool: list[Round], head_pool: list[Round], draws: int, k: int, rng: random.Random
) -> tuple[int, dict[str, int]]:
    flagged = 0
    counts: dict[str, int] = defaultdict(int)
    for _ in range(draws):
        base_runs = [parse_results(r.base) for r in rng.sample(base_pool, k)]
        head_runs = [parse_results(r.head) for r in rng.sample(head_pool, k)]
        labels = list(base_runs[0])
        samples = {
            label: ([run.get(label) for run in base_runs], [run.get(label) for run in head_runs])
            for label in labels
        }
        found = compare(samples)
        for c in found:
            counts[c.verdict] += 1
        flagged += any(c.verdict in (REGRESSION, IMPROVEMENT) for c in found)
    return flagged, dict(counts)


def true_ratios(pool: list[Round]) -> dict[str, float]:
    """Per configuration, the geometric mean of head/base over every round of the pool."""
    logs: dict[str, list[float]] = defaultdict(list)
    for r in pool:
        base, head = parse_results(r.base), parse_results(r.head)
        for label, value in head.items():
            if label in base and math.isfinite(value) and math.isfinite(base[label]):
                logs[label].append(math.log(value / base[label]))
    return {label: math.exp(statistics.fmean(v)) for label, v in logs.items()}


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5, help="rounds per draw (rules default)")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pools = load(args.runs)
    gpus = sorted({uuid for _, uuid in pools})
    lines: list[str] = []
    say = lines.append
    say(f"GPUs seen: {', '.join(gpus)}")
    for (scenario, uuid), pool in sorted(pools.items()):
        jobs = sorted({str(r.job.relative_to(args.runs)) for r in pool})
        say(f"- {scenario} on {uuid[:12]}: {len(pool)} rounds ({', '.join(jobs)})")
    main_gpu = max(gpus, key=lambda u: len(pools.get(("same", u), [])))
    same = pools[("same", main_gpu)]
    quiet, spread = quiet_configs(same)
    say("")
    say(f"## Identical code, one GPU ({main_gpu[:12]}), {args.draws} draws of {args.rounds} rounds")
    stats = draw_stats(same, args.draws, args.rounds, rng)
    total = sum(stats["counts"].values())
    say(
        f"false flags: {stats['flagged_draws']} of {args.draws} draws "
        f"({pct(stats['flagged_draws'], args.draws)}); configurations: "
        + ", ".join(
            f"{v} {pct(stats['counts'].get(v, 0), total)}"
            for v in (UNCHANGED, INCONCLUSIVE, REGRESSION, IMPROVEMENT)
        )
        + f"; 'unchanged' with an interval wider than ±5%: {stats['wide_unchanged']}"
    )
    say("")
    say(
        "| configuration | run-to-run spread (sd of log time, all rounds) | unchanged | inconclusive | flagged |"
    )
    say("| --- | ---: | ---: | ---: | ---: |")
    for label in sorted(spread, key=lambda lab: spread[lab]):
        verdicts_of = stats["per_config"].get(label, [])
        n = len(verdicts_of) or 1
        flagged = sum(v in (REGRESSION, IMPROVEMENT) for v in verdicts_of)
        say(
            f"| {label} | {spread[label]:.2%} | {pct(verdicts_of.count(UNCHANGED), n)} | "
            f"{pct(verdicts_of.count(INCONCLUSIVE), n)} | {pct(flagged, n)} |"
        )
    for other in gpus:
        if other != main_gpu and ("same", other) in pools:
            pool = pools[("same", other)]
            draws = min(args.draws, math.comb(len(pool), args.rounds) * 4)
            s2 = draw_stats(pool, draws, args.rounds, rng)
            say("")
            say(
                f"second GPU {other[:12]}: {s2['flagged_draws']} false flags in {draws} draws of "
                f"{args.rounds} from {len(pool)} rounds ({math.comb(len(pool), args.rounds)} distinct subsets)"
            )
    say("")
    say(
        f"## Planted slowdowns, {args.rounds} rounds a draw, on the {len(quiet)} configurations quieter than 2%"
    )
    say(
        "| planted | rounds pooled | actual ratio on quiet configurations (all rounds) | regression | significant slower, not yet beyond 5% | unchanged | draws with every quiet configuration flagged |"
    )
    say("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for scenario, planted in (("slow5", "5%"), ("slow10", "10%")):
        pool = pools.get((scenario, main_gpu))
        if not pool:
            continue
        ratios = true_ratios(pool)
        quiet_ratios = [ratios[c] for c in quiet if c in ratios]
        s3 = draw_stats(pool, args.draws, args.rounds, rng)
        hits = straddle = unchanged = cells = 0
        all_flagged = 0
        for i in range(args.draws):
            row = [s3["per_config"][c][i] for c in quiet if c in s3["per_config"]]
            all_flagged += all(v == REGRESSION for v in row)
        for c in quiet:
            for v in s3["per_config"].get(c, []):
                cells += 1
                hits += v == REGRESSION
                unchanged += v == UNCHANGED
        # "significant slower, under the factor": the inconclusive reason says so.
        straddle = cells - hits - unchanged
        say(
            f"| {planted} | {len(pool)} | {min(quiet_ratios):.3f}–{max(quiet_ratios):.3f} | "
            f"{pct(hits, cells)} | {pct(straddle, cells)} | {pct(unchanged, cells)} | "
            f"{pct(all_flagged, args.draws)} |"
        )
        say("")
        say(
            f"per configuration ({planted}): "
            + "; ".join(
                f"{c} {ratios[c]:.3f} → {pct(s3['per_config'][c].count(REGRESSION), len(s3['per_config'][c]))}"
                for c in sorted(quiet)
                if c in ratios
            )
        )
    say("")
    say("## Across machines")
    others = [u for u in gpus if u != main_gpu and ("same", u) in pools]
    if others:
        other_pool = pools[("same", others[0])]
        base_side = Side()
        for n, r in enumerate(same[: len(other_pool)], start=1):
            base_side.runs[n] = r.base
        base_side.machine = same[0].machine
        head_side = Side()
        for n, r in enumerate(other_pool, start=1):
            head_side.runs[n] = r.head
        head_side.machine = other_pool[0].machine
        default = verdicts(base_side, head_side)
        say(
            f"(a) default rules, base on {main_gpu[:12]}, head on {others[0][:12]}: "
            + ", ".join(
                f"{v} {sum(c.verdict == v for c in default.comparisons)}"
                for v in (INCONCLUSIVE, REGRESSION, IMPROVEMENT, UNCHANGED)
            )
            + f" of {len(default.comparisons)}; reason: {default.comparisons[0].reason[:160]}"
        )
        flagged, counts = unpaired_false_flags(same, other_pool, args.draws, args.rounds, rng)
        total = sum(counts.values())
        say(
            f"(b) allowed (unpaired, {args.draws} draws of {args.rounds} vs {args.rounds}): "
            f"false flags in {flagged} draws ({pct(flagged, args.draws)}); configurations "
            + ", ".join(
                f"{v} {pct(counts.get(v, 0), total)}"
                for v in (UNCHANGED, INCONCLUSIVE, REGRESSION, IMPROVEMENT)
            )
        )
        cross = {}
        for label in parse_results(same[0].base):
            b = [parse_results(r.base).get(label) for r in same]
            h = [parse_results(r.head).get(label) for r in other_pool]
            b = [x for x in b if x and math.isfinite(x)]
            h = [x for x in h if x and math.isfinite(x)]
            if b and h:
                cross[label] = math.exp(
                    statistics.fmean(map(math.log, h)) - statistics.fmean(map(math.log, b))
                )
        say(
            "machine-to-machine ratio of identical code (second / first, all rounds): "
            + "; ".join(
                f"{c} {r:.3f}"
                for c, r in sorted(cross.items(), key=lambda kv: -abs(math.log(kv[1])))[:8]
            )
        )
    rewritten = same[0].machine.replace(
        main_gpu.encode(), b"GPU-00000000-0000-0000-0000-000000000000"
    )
    s4 = draw_stats(same, 200, args.rounds, rng, head_machine=rewritten)
    total = sum(s4["counts"].values())
    say(
        f"(c) simulated: 200 same-GPU draws with the head uuid rewritten: "
        f"{pct(s4['counts'].get(INCONCLUSIVE, 0), total)} inconclusive, false flags in {s4['flagged_draws']}"
    )
    say("")
    say("## The old design on the same rounds: unpaired (two builds)")
    flagged, counts = unpaired_false_flags(same, same, args.draws, args.rounds, rng)
    total = sum(counts.values())
    say(
        f"identical code, base and head drawn from different rounds, Welch: false flags in {flagged} of "
        f"{args.draws} draws ({pct(flagged, args.draws)}); configurations "
        + ", ".join(
            f"{v} {pct(counts.get(v, 0), total)}"
            for v in (UNCHANGED, INCONCLUSIVE, REGRESSION, IMPROVEMENT)
        )
    )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
