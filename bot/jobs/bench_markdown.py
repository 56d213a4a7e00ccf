"""One benchmark job's verdicts as the Markdown table a kernel author reads in seconds.

First line: what was compared with what, on which GPU, over how many rounds; then one row per
configuration: the two times, the ratio with its 95% interval, the verdict and its reason.
Worst first: regressions, then failed and inconclusive rows, then improvements and the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.markdown import escape_text
from bot.jobs.compare import FAILED, IMPROVEMENT, INCONCLUSIVE, REGRESSION, UNCHANGED, Comparison
from bot.jobs.paired_runs import Verdicts, sides_summary

MARKS = {
    REGRESSION: "🔴 regression",
    IMPROVEMENT: "🟢 improvement",
    UNCHANGED: "⚪ unchanged",
    INCONCLUSIVE: "🟡 inconclusive",
    FAILED: "❌ failed",
}
_ORDER = {REGRESSION: 0, FAILED: 1, INCONCLUSIVE: 2, IMPROVEMENT: 3, UNCHANGED: 4}


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def ratio_cell(c: Comparison) -> str:
    if c.ratio is None:
        return "–"
    if c.low is None or c.high is None:
        return f"{c.ratio:.3f}"
    return f"{c.ratio:.3f} ({c.low:.3f}–{c.high:.3f})"


def worst_first(comparisons: Sequence[Comparison]) -> list[Comparison]:
    return sorted(comparisons, key=lambda c: _ORDER.get(c.verdict, 5))


def headline(result: Verdicts) -> str:
    sides = sides_summary(result)
    base_gpus, head_gpus = result.gpus.get("base"), result.gpus.get("head")
    if base_gpus and head_gpus and base_gpus == head_gpus:
        gpu = ", ".join(g.describe() for g in base_gpus)
        driver = base_gpus[0].driver
        what = (
            f"head ({', '.join(result.backends.get('head') or ['?'])}) against base "
            f"({', '.join(result.backends.get('base') or ['?'])}) on {gpu}, driver {driver}"
        )
    else:
        what = f"head: {sides['head']}; base: {sides['base']}"
    line = f"{what}; {result.rounds} paired rounds, ABBA"
    start, end = result.gpus.get("head"), result.gpus_end.get("head")
    if start and end and start[0].sm_mhz and end[0].sm_mhz:
        line += (
            f"; SM clock {start[0].sm_mhz:.0f}→{end[0].sm_mhz:.0f} MHz, "
            f"{start[0].temperature_c or 0:.0f}→{end[0].temperature_c or 0:.0f} °C"
        )
    return line


def markdown(result: Verdicts, *, max_rows: int = 60) -> str:
    rows = worst_first(result.comparisons)
    lines = [
        escape_text(headline(result)),
        "",
        "| configuration | base | head | head/base (95% interval) | verdict | why |",
        "| --- | ---: | ---: | --- | --- | --- |",
    ]
    for c in rows[:max_rows]:
        lines.append(
            f"| {escape_text(c.config)} | {duration(c.base)} | {duration(c.head)} | "
            f"{ratio_cell(c)} | {MARKS.get(c.verdict, c.verdict)} | {escape_text(c.reason)} |"
        )
    if len(rows) > max_rows:
        lines.append(f"\n{len(rows) - max_rows} more configurations in the JSON output.")
    if result.problems:
        lines.append("")
        lines.extend(f"- {escape_text(problem)}" for problem in result.problems[:20])
    return "\n".join(lines) + "\n"
