# ruff: noqa: E501  (the Markdown lines it writes are long)
"""How many ABBA rounds, and which factor, a paired benchmark job needs: a power calculation
through prbot's own verdict code.

A job of ``rounds`` rounds over ``configs`` configurations is simulated: each run's log time is
the configuration's time plus noise of sd ``sigma`` per side (the run-to-run spread the GPU
eval measures: sd of one side's log time over rounds), of which a share ``shared`` is common
to the two runs of a round (what pairing cancels; 0 is the worst case, two independent runs).
The head is slowed by ``change`` (5%) on every configuration (the planted slowdown the GPU eval
measures), or on one configuration only (a PR that slows one kernel: the correction across
configurations then asks more of it), or not at all (identical code). Each simulated job goes
through ``bot.jobs.compare.compare_paired`` with the factor and alpha under test, so the
figures are those of the rule itself: a regression only when the point ratio is at least
``1 + factor`` and the change is significant after Benjamini-Hochberg.

Why the factor must sit below the change to catch it: at ``factor == change`` the point ratio
of a true 5% slowdown lands on either side of 1.05 about half the time, whatever the rounds.

    uv run python benchmarks/bench_rounds_power.py --out docs/benchmarks/bench_rounds_power.md
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.jobs.compare import IMPROVEMENT, REGRESSION, compare_paired  # noqa: E402


def simulate(
    rng: random.Random,
    *,
    rounds: int,
    configs: int,
    sigma: float,
    shared: float,
    slowed: int,
    change: float,
    factor: float,
    alpha: float,
) -> list[str]:
    """The verdicts of one simulated job; the first ``slowed`` configurations are slowed."""
    own = sigma * math.sqrt(1.0 - shared)
    common = sigma * math.sqrt(shared)
    data = {}
    for index in range(configs):
        shift = math.log1p(change) if index < slowed else 0.0
        by_round = {}
        for number in range(1, rounds + 1):
            round_part = rng.gauss(0.0, common)
            base = math.exp(math.log(1e-3) + round_part + rng.gauss(0.0, own))
            head = math.exp(math.log(1e-3) + shift + round_part + rng.gauss(0.0, own))
            by_round[number] = (base, head)
        data[f"c{index}"] = by_round
    return [c.verdict for c in compare_paired(data, factor=factor, alpha=alpha)]


def cell(rng: random.Random, draws: int, **kwargs) -> dict[str, float]:
    configs = kwargs["configs"]
    caught_all = caught_one = 0
    flagged = 0
    for _ in range(draws):
        every = simulate(rng, slowed=configs, **kwargs)
        caught_all += sum(v == REGRESSION for v in every)
        one = simulate(rng, slowed=1, **kwargs)
        caught_one += one[0] == REGRESSION
        same = simulate(rng, slowed=0, **kwargs)
        flagged += any(v in (REGRESSION, IMPROVEMENT) for v in same)
    return {
        "all": caught_all / (draws * configs),
        "one": caught_one / draws,
        "false": flagged / draws,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--configs", type=int, default=18, help="configurations in one job")
    parser.add_argument("--change", type=float, default=0.05, help="the slowdown to catch")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--sigmas", default="0.01,0.02")
    parser.add_argument("--shared", type=float, default=0.0, help="share of noise a round shares")
    parser.add_argument("--factors", default="0.02,0.03,0.04,0.05")
    parser.add_argument("--rounds", default="4,5,6,8,10,12")
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--max-false", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    sigmas = [float(s) for s in args.sigmas.split(",")]
    factors = [float(f) for f in args.factors.split(",")]
    round_counts = [int(r) for r in args.rounds.split(",")]
    lines: list[str] = []
    say = lines.append
    say(
        f"{args.draws} simulated jobs a cell, {args.configs} configurations each, a {args.change:.0%} "
        f"slowdown, alpha {args.alpha:.0%} (Benjamini-Hochberg), share of noise common to a "
        f"round's two runs {args.shared:.0%}; seed {args.seed}."
    )
    say("")
    say(
        "| noise (sd per side) | factor | rounds | caught, all slowed | caught, one slowed | identical code: jobs with a false flag |"
    )
    say("| ---: | ---: | ---: | ---: | ---: | ---: |")
    results = {}
    for sigma in sigmas:
        for factor in factors:
            for rounds in round_counts:
                got = cell(
                    rng,
                    args.draws,
                    rounds=rounds,
                    configs=args.configs,
                    sigma=sigma,
                    shared=args.shared,
                    change=args.change,
                    factor=factor,
                    alpha=args.alpha,
                )
                results[(sigma, factor, rounds)] = got
                say(
                    f"| {sigma:.0%} | {factor:.0%} | {rounds} | {got['all']:.1%} | "
                    f"{got['one']:.1%} | {got['false']:.1%} |"
                )
    worst = max(sigmas)
    say("")
    say(
        f"Smallest rounds that catch {args.change:.0%} in ≥ {args.target:.0%} (all slowed) with false "
        f"flags ≤ {args.max_false:.0%} at {worst:.0%} noise, per factor:"
    )
    for factor in factors:
        fit = [
            r
            for r in round_counts
            if results[(worst, factor, r)]["all"] >= args.target
            and results[(worst, factor, r)]["false"] <= args.max_false
        ]
        say(f"- factor {factor:.0%}: {fit[0] if fit else f'none up to {max(round_counts)}'}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
