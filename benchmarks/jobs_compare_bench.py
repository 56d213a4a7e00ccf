"""Error rates of the base/head benchmark verdict on seeded data (run by hand).

    uv run python benchmarks/jobs_compare_bench.py [--seeds 500] [--out FILE]

Each seed is one PR's comparison: 12 configurations (an MLA decode sweep), N runs per side,
per-run mean times log-normal around each configuration's true time with a run-to-run
coefficient of variation (CV). A/A seeds have no change; the others slow every configuration
by 5% or 10%. Reported per N (3, 5, 10) and CV (2%, 5%):

- false-flag rate: A/A seeds where anything was flagged (target: at most 5%);
- detection rate: slowed seeds where every configuration was flagged as a regression, and
  the share of configurations flagged.

Beside prbot's rule (>= 5% and Welch on log times with Benjamini-Hochberg across the
configurations), two simpler rules in the same run: the ratio alone (>= 5%), and Welch at
p < 0.05 per configuration with no correction. Figures go to docs/benchmarks/jobs_compare.md.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

from bot.jobs.compare import REGRESSION, UNCHANGED, compare
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


def flags_prbot(samples: dict) -> list[bool]:
    return [c.verdict == REGRESSION for c in compare(samples)]


def flags_any_prbot(samples: dict) -> bool:
    return any(c.verdict != UNCHANGED for c in compare(samples))


def flags_ratio_only(samples: dict) -> list[bool]:
    out = []
    for base, head in samples.values():
        ratio = math.exp(
            sum(map(math.log, head)) / len(head) - sum(map(math.log, base)) / len(base)
        )
        out.append(ratio >= 1.05)
    return out


def flags_uncorrected(samples: dict) -> list[bool]:
    out = []
    for base, head in samples.values():
        test = welch([math.log(t) for t in base], [math.log(t) for t in head])
        out.append(test.p_value < 0.05 and math.exp(test.difference) >= 1.05)
    return out


RULES = {
    "prbot (>=5% and Welch+BH)": flags_prbot,
    "ratio >= 5% alone": flags_ratio_only,
    "Welch p<0.05, no correction": flags_uncorrected,
}


def measure(seeds: int) -> list[dict]:
    rows = []
    for cv in (0.02, 0.05):
        for runs in (3, 5, 10):
            for name, rule in RULES.items():
                row = {"cv": cv, "runs": runs, "rule": name}
                aa_flagged = 0
                for seed in range(seeds):
                    samples = seeded(random.Random(seed), runs, 0.0, cv)
                    if rule is flags_prbot:
                        aa_flagged += flags_any_prbot(samples)
                    else:
                        aa_flagged += any(rule(samples))
                row["false_flag"] = aa_flagged / seeds
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
        "N runs per side, log-normal run-to-run noise with the given CV. *False flags*: A/A "
        "seeds where anything was flagged (prbot: any verdict but `unchanged`). *Detected*: "
        "slowed seeds where every configuration came out a regression; *share*: the mean "
        "share of configurations flagged.",
        "",
        "| CV | N | rule | false flags (A/A) | 5% slower: detected / share "
        "| 10% slower: detected / share |",
        "| ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['cv']:.0%} | {row['runs']} | {row['rule']} | {row['false_flag']:.1%} "
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
