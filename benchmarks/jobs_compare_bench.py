"""Error rates of the base/head benchmark verdict on seeded data (run by hand).

    uv run python benchmarks/jobs_compare_bench.py [--seeds 500] [--out FILE]

Each seed is one PR's comparison: 12 configurations (an MLA decode sweep), N runs per side,
per-run mean times log-normal around each configuration's true time with a run-to-run
coefficient of variation (CV). A/A seeds have no change; the others slow every configuration
by 5% or 10%. Reported per N (3, 5, 10) and CV (2%, 5%):

- false-flag rate: A/A seeds where any configuration came out a regression or an
  improvement (target: at most 1%), and A/A seeds where any was not ``unchanged``
  (inconclusive says "cannot tell", not "changed");
- detection rate: slowed seeds where every configuration was flagged as a regression, and
  the share of configurations flagged.

prbot's rule at the rules' default factor (``DEFAULT_FACTOR``; the ratio at least that and
significant after Benjamini-Hochberg across the configurations), as a job judges it: the runs
paired by index as ABBA rounds (``compare_paired``; the noise here is independent, so pairing
cancels nothing: its worst case), and unpaired as two builds would be (Welch on log times).
Beside them, two simpler rules in the same run: the ratio alone (at least the factor), and
Welch at p < 0.05 per configuration with no correction. Figures go to
docs/benchmarks/jobs_compare.md.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

from bot.jobs.compare import (
    DEFAULT_FACTOR,
    IMPROVEMENT,
    REGRESSION,
    UNCHANGED,
    compare,
    compare_paired,
)
from bot.jobs.stats import welch

CONFIGS = 12
OUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "jobs_compare.md"


def seeded(rng: random.Random, runs: int, slowdown: float, cv: float) -> dict:
    samples = {}
    for index in range(CONFIGS):
        true = 1e-4 * (1 + index)
        base = [true * math.exp(rng.gauss(0, cv)) for _ in range(runs)]
        head = [true * (1 + slowdown) * math.exp(rng.gauss(0, cv)) for _ in range(runs)]
        samples[f"config-{index}"] = (base, head)
    return samples


def paired(samples: dict) -> dict:
    return {
        config: {n: pair for n, pair in enumerate(zip(base, head, strict=True), start=1)}
        for config, (base, head) in samples.items()
    }


def verdicts_unpaired(samples: dict) -> list[str]:
    return [c.verdict for c in compare(samples)]


def verdicts_paired(samples: dict) -> list[str]:
    return [c.verdict for c in compare_paired(paired(samples))]


def prbot_rule(verdicts):
    def flags(samples: dict) -> list[bool]:
        return [v == REGRESSION for v in verdicts(samples)]

    flags.verdicts = verdicts  # type: ignore[attr-defined]
    return flags


def flags_ratio_only(samples: dict) -> list[bool]:
    out = []
    for base, head in samples.values():
        ratio = math.exp(
            sum(map(math.log, head)) / len(head) - sum(map(math.log, base)) / len(base)
        )
        out.append(ratio >= 1 + DEFAULT_FACTOR)
    return out


def flags_uncorrected(samples: dict) -> list[bool]:
    out = []
    for base, head in samples.values():
        test = welch([math.log(t) for t in base], [math.log(t) for t in head])
        out.append(test.p_value < 0.05 and math.exp(test.difference) >= 1 + DEFAULT_FACTOR)
    return out


RULES = {
    f"prbot, paired rounds (>={DEFAULT_FACTOR:.0%}, paired t + BH)": prbot_rule(verdicts_paired),
    f"prbot, two builds (>={DEFAULT_FACTOR:.0%}, Welch + BH)": prbot_rule(verdicts_unpaired),
    f"ratio >= {DEFAULT_FACTOR:.0%} alone": flags_ratio_only,
    "Welch p<0.05, no correction": flags_uncorrected,
}


def measure(seeds: int) -> list[dict]:
    rows = []
    for cv in (0.02, 0.05):
        for runs in (3, 5, 10):
            for name, rule in RULES.items():
                row = {"cv": cv, "runs": runs, "rule": name}
                aa_flagged = aa_not_unchanged = 0
                for seed in range(seeds):
                    samples = seeded(random.Random(seed), runs, 0.0, cv)
                    verdicts = getattr(rule, "verdicts", None)
                    if verdicts is not None:
                        found = verdicts(samples)
                        aa_flagged += any(v in (REGRESSION, IMPROVEMENT) for v in found)
                        aa_not_unchanged += any(v != UNCHANGED for v in found)
                    else:
                        aa_flagged += any(rule(samples))
                row["false_flag"] = aa_flagged / seeds
                row["not_unchanged"] = (
                    aa_not_unchanged / seeds if getattr(rule, "verdicts", None) else None
                )
                for slowdown in (0.05, 0.10):
                    whole = share = 0.0
                    for seed in range(seeds):
                        flags = rule(seeded(random.Random(10**6 + seed), runs, slowdown, cv))
                        whole += all(flags)
                        share += sum(flags) / len(flags)
                    row[f"all_{slowdown}"] = whole / seeds
                    row[f"share_{slowdown}"] = share / seeds
                rows.append(row)
                print(
                    f"cv={cv:.0%} N={runs} {name}: A/A {row['false_flag']:.1%}",
                    file=sys.stderr,
                )
    return rows


def render(rows: list[dict], seeds: int) -> str:
    lines = [
        "# Benchmark verdicts: false flags and detection on seeded data",
        "",
        f"Rerun: `uv run python benchmarks/jobs_compare_bench.py --seeds {seeds}`",
        "",
        f"{seeds} seeds per cell; each seed is one comparison of {CONFIGS} configurations, "
        "N runs per side, log-normal run-to-run noise with the given CV; prbot's factor is the "
        f"rules' default, {DEFAULT_FACTOR:.0%}. *False flags*: A/A seeds where any "
        "configuration came out a regression or an improvement; *not unchanged*: A/A seeds "
        "where any was not `unchanged` (mostly `inconclusive`: too noisy to tell). *Detected*: "
        "slowed seeds where every configuration came out a regression; *share*: the mean "
        "share of configurations flagged.",
        "",
        "| CV | N | rule | false flags (A/A) | not unchanged (A/A) | 5% slower: detected / "
        "share | 10% slower: detected / share |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['cv']:.0%} | {row['runs']} | {row['rule']} | {row['false_flag']:.1%} "
            f"| {'–' if row['not_unchanged'] is None else format(row['not_unchanged'], '.1%')} "
            f"| {row['all_0.05']:.1%} / {row['share_0.05']:.1%} "
            f"| {row['all_0.1']:.1%} / {row['share_0.1']:.1%} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = render(measure(args.seeds), args.seeds)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
