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
import json
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.jobs.benchmark_results import parse_results  # noqa: E402
from bot.jobs.compare import (  # noqa: E402
    DEFAULT_FACTOR,
    DEFAULT_ROUNDS,
    IMPROVEMENT,
    INCONCLUSIVE,
    REGRESSION,
    UNCHANGED,
    compare,
)
from bot.jobs.gpu_identity import parse_machine_csv  # noqa: E402
from bot.jobs.paired_runs import RUN_NAME, Side, verdicts  # noqa: E402

SCENARIOS = ("same", "slow5", "slow10")
# Planted jobs of an earlier calibration (superseded: its first pass was not settled).
SUPERSEDED = ("slow5_v1", "slow10_v1")


class Round:
    def __init__(self, job: Path, number: int, base: bytes, head: bytes, machine: bytes) -> None:
        self.job, self.number, self.base, self.head, self.machine = job, number, base, head, machine


def load(root: Path) -> dict[tuple[str, str], list[Round]]:
    """(scenario, GPU uuid) -> rounds, from every job directory under ``root``."""
    pools: dict[tuple[str, str], list[Round]] = defaultdict(list)
    for job in sorted(p.parent for p in root.rglob("job.json")):
        if job.name not in SCENARIOS + SUPERSEDED:
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
    """Configurations whose base times vary less than ``limit`` (sd of log) across rounds
    (every base run is the same, unchanged code, whatever the head ran)."""
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
                factor = kwargs.get("factor", DEFAULT_FACTOR)
                if c.low < 1 / (1 + factor) or c.high > 1 + factor:
                    wide_unchanged += 1
        flagged_draws += flagged
    return {
        "counts": dict(counts),
        "flagged_draws": flagged_draws,
        "wide_unchanged": wide_unchanged,
        "per_config": per_config,
    }


def planted_ok(pool: list[Round]) -> dict[str, bool]:
    """Per configuration: whether every head run could plant the slowdown (its launch alone
    cost less than the planted share)."""
    ok: dict[str, bool] = defaultdict(lambda: True)
    for r in pool:
        for entry in json.loads(r.head):
            config = entry.get("config") or {}
            label = f"{config.get('backend')} {config.get('batch_spec')}"
            ok[label] = ok[label] and bool(entry.get("planted_ok"))
    return dict(ok)


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


def verdict_shares(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    return ", ".join(
        f"{v} {pct(counts.get(v, 0), total)}"
        for v in (UNCHANGED, INCONCLUSIVE, REGRESSION, IMPROVEMENT)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument(
        "--rounds", type=int, default=DEFAULT_ROUNDS, help="rounds per draw (rules default)"
    )
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pools = load(args.runs)
    k = args.rounds
    gpus = sorted({uuid for _, uuid in pools})
    lines: list[str] = []
    say = lines.append
    say(f"Rules: factor {DEFAULT_FACTOR:.0%}, {k} rounds a draw (the defaults), alpha 5% (BH).")
    say("")
    say("Pools (scenario on GPU: rounds, jobs):")
    for (scenario, uuid), pool in sorted(pools.items()):
        jobs = sorted({str(r.job.relative_to(args.runs)) for r in pool})
        say(f"- {scenario} on {uuid[:12]}: {len(pool)} rounds ({', '.join(jobs)})")
    say("")
    say(f"## Identical code: {args.draws} draws of up to {k} rounds per pool")
    say("")
    say(
        "| GPU | rounds pooled | rounds a draw | distinct subsets | draws with a false flag | configurations: verdicts | 'unchanged' wider than the factor |"
    )
    say("| --- | ---: | ---: | ---: | ---: | --- | ---: |")
    same_pools = {u: pools[("same", u)] for u in gpus if ("same", u) in pools}
    everything = [r for pool in same_pools.values() for r in pool]
    rows = [(u[:12], pool) for u, pool in same_pools.items()]
    rows.append(("all three, mixed (no real job mixes GPUs)", everything))
    main_same = max(same_pools.values(), key=len)
    per_config_same = None
    for name, pool in rows:
        take = min(k, len(pool))
        st = draw_stats(pool, args.draws, take, rng)
        if pool is main_same:
            per_config_same = st
        say(
            f"| {name} | {len(pool)} | {take} | {math.comb(len(pool), take)} | "
            f"{st['flagged_draws']} of {args.draws} ({pct(st['flagged_draws'], args.draws)}) | "
            f"{verdict_shares(st['counts'])} | {st['wide_unchanged']} |"
        )
    quiet_main, spread_main = quiet_configs(main_same)
    say("")
    say(f"Per configuration, the largest pool ({len(main_same)} rounds):")
    say("")
    say(
        "| configuration | spread (sd of log time, base runs) | unchanged | inconclusive | flagged |"
    )
    say("| --- | ---: | ---: | ---: | ---: |")
    for label in sorted(spread_main, key=lambda lab: spread_main[lab]):
        got = per_config_same["per_config"].get(label, [])
        n = len(got) or 1
        flagged = sum(v in (REGRESSION, IMPROVEMENT) for v in got)
        say(
            f"| {label} | {spread_main[label]:.2%} | {pct(got.count(UNCHANGED), n)} | "
            f"{pct(got.count(INCONCLUSIVE), n)} | {pct(flagged, n)} |"
        )
    say("")
    say("## Planted slowdowns")
    for scenario, planted in (("slow5", "5%"), ("slow10", "10%")):
        for uuid in gpus:
            pool = pools.get((scenario, uuid))
            if not pool:
                continue
            base_rounds = [r for (sc, u), p in pools.items() if u == uuid for r in p]
            quiet, spread = quiet_configs(base_rounds)
            ok = planted_ok(pool)
            target = sorted(c for c in quiet if ok.get(c))
            take = min(k, len(pool))
            ratios = true_ratios(pool)
            st = draw_stats(pool, args.draws, take, rng)
            cells = [v for c in target for v in st["per_config"].get(c, [])]
            hits = sum(v == REGRESSION for v in cells)
            unchanged = sum(v == UNCHANGED for v in cells)
            all_flagged = sum(
                all(st["per_config"][c][i] == REGRESSION for c in target) for i in range(args.draws)
            )
            say("")
            say(
                f"### {planted} on {uuid[:12]}: {len(pool)} rounds pooled, {args.draws} draws of "
                f"{take} ({math.comb(len(pool), take)} distinct subsets)"
            )
            say(
                f"configurations quieter than 2% (base runs over {len(base_rounds)} rounds of this "
                f"GPU) where the slowdown could be planted: {len(target)} of {len(ratios)}; "
                f"not plantable (the extra launch alone costs more): "
                f"{', '.join(sorted(c for c in ok if not ok[c])) or 'none'}; "
                f"noisier than 2%: {', '.join(sorted(c for c in ratios if c not in quiet)) or 'none'}"
            )
            target_ratios = [ratios[c] for c in target]
            say(
                f"measured head/base ratio there (geometric mean, all rounds): "
                f"{min(target_ratios):.3f}–{max(target_ratios):.3f}, median "
                f"{statistics.median(target_ratios):.3f}"
            )
            say(
                f"**caught (regression): {pct(hits, len(cells))}** of {len(cells)} (draw, "
                f"configuration); unchanged {pct(unchanged, len(cells))}; the rest inconclusive; "
                f"draws with every one of them caught: {pct(all_flagged, args.draws)}"
            )
            say("")
            say("| configuration | measured ratio | caught |")
            say("| --- | ---: | ---: |")
            for c in sorted(ratios, key=lambda lab: ratios[lab]):
                got = st["per_config"].get(c, [])
                mark = "" if c in target else " (not counted)"
                say(f"| {c}{mark} | {ratios[c]:.3f} | {pct(got.count(REGRESSION), len(got))} |")
    superseded = [(sc, u) for (sc, u) in pools if sc in SUPERSEDED]
    for sc, uuid in sorted(superseded):
        ratios = true_ratios(pools[(sc, uuid)])
        say("")
        say(
            f"superseded calibration {sc} on {uuid[:12]} ({len(pools[(sc, uuid)])} rounds): "
            f"measured ratios {min(ratios.values()):.3f}–{max(ratios.values()):.3f}; "
            + "; ".join(f"{c} {r:.3f}" for c, r in sorted(ratios.items(), key=lambda kv: kv[1])[:5])
        )
    say("")
    say("## Across machines: base on one H200, head on another, identical code")
    cross_k = min(5, *(len(p) for p in same_pools.values()))
    say("")
    say(
        f"| base GPU | head GPU | default rules | allowed (unpaired, {args.draws} draws of {cross_k} vs {cross_k}): draws flagged | largest machine-to-machine ratio |"
    )
    say("| --- | --- | --- | --- | --- |")
    for base_uuid in same_pools:
        for head_uuid in same_pools:
            if base_uuid == head_uuid:
                continue
            base_pool, head_pool = same_pools[base_uuid], same_pools[head_uuid]
            base_side, head_side = Side(), Side()
            for n, (b, h) in enumerate(zip(base_pool, head_pool, strict=False), start=1):
                base_side.runs[n], head_side.runs[n] = b.base, h.head
            base_side.machine, head_side.machine = base_pool[0].machine, head_pool[0].machine
            default = verdicts(base_side, head_side)
            counts = defaultdict(int)
            for c in default.comparisons:
                counts[c.verdict] += 1
            flagged = 0
            for _ in range(args.draws):
                b_side, h_side = Side(), Side()
                for n, r in enumerate(rng.sample(base_pool, cross_k), start=1):
                    b_side.runs[n] = r.base
                for n, r in enumerate(rng.sample(head_pool, cross_k), start=1):
                    h_side.runs[n] = r.head
                b_side.machine, h_side.machine = base_pool[0].machine, head_pool[0].machine
                got = verdicts(b_side, h_side, allow_different_gpus=True)
                flagged += any(c.verdict in (REGRESSION, IMPROVEMENT) for c in got.comparisons)
            cross = {}
            for label in parse_results(base_pool[0].base):
                b = [parse_results(r.base).get(label) for r in base_pool]
                h = [parse_results(r.head).get(label) for r in head_pool]
                b = [x for x in b if x and math.isfinite(x)]
                h = [x for x in h if x and math.isfinite(x)]
                if b and h:
                    cross[label] = math.exp(
                        statistics.fmean(map(math.log, h)) - statistics.fmean(map(math.log, b))
                    )
            worst = max(cross.items(), key=lambda kv: abs(math.log(kv[1])))
            say(
                f"| {base_uuid[:12]} | {head_uuid[:12]} | {dict(counts)} | {flagged} of "
                f"{args.draws} ({pct(flagged, args.draws)}) | {worst[0]} {worst[1]:.3f} |"
            )
    rewritten = main_same[0].machine.replace(
        parse_machine_csv(main_same[0].machine)[0].uuid.encode(),
        b"GPU-00000000-0000-0000-0000-000000000000",
    )
    s4 = draw_stats(main_same, 200, min(k, len(main_same)), rng, head_machine=rewritten)
    say("")
    say(
        f"simulated: 200 same-GPU draws with the head's uuid rewritten: "
        f"{pct(s4['counts'].get(INCONCLUSIVE, 0), sum(s4['counts'].values()))} inconclusive, "
        f"false flags in {s4['flagged_draws']}"
    )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
