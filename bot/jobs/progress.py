"""The jobs section as the records say: each job's state and link, benchmark verdicts, chart.

Pure: the section the check made (findings with status ``selected`` or
``awaiting_approval``) plus the job records (and reused base runs) give the section the
comment shows now. The check uses it when a /recheck re-runs a head whose jobs ran already;
the result handlers use it to re-render the stored report as results arrive, without
running the checks again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bot.core.sections import Section, Status
from bot.jobs.bench_markdown import headline
from bot.jobs.benchmark_results import samples_from_runs
from bot.jobs.compare import (
    DEFAULT_ALPHA,
    DEFAULT_FACTOR,
    FAILED,
    IMPROVEMENT,
    INCONCLUSIVE,
    REGRESSION,
    compare,
)
from bot.jobs.config import DEFAULT_FAIL_ON
from bot.jobs.paired_runs import judge
from bot.jobs.records import ACTIVE, JobRecord
from bot.jobs.selection import BENCHMARK, job_device

# A chart of more configurations than this is unreadable; the table has them all.
MAX_CHART_BARS = 24
MAX_TABLE_ROWS = 60
# Engine URLs are the operator's engine's, but a link is still only a plain http(s) URL.
_SAFE_URL = re.compile(r"^https?://[A-Za-z0-9.\-]+(:\d+)?(/[A-Za-z0-9._~/#?=&%:+\-]*)?$")
_CHART_LABEL = re.compile(r"[^A-Za-z0-9_.,=+/ ()x-]")
FAILING = ("failed", "timed_out", "canceled")
CLASSIFIED = ("failed", "timed_out")
# The jobs section's groups of classified failures, in the order a reader wants them.
SIGNAL_ORDER = ("new", "unknown", "broken_trunk", "flaky")


def safe_url(url: str | None) -> str | None:
    return url if url and _SAFE_URL.match(url) else None


def chart_label(text: str) -> str:
    """A label mermaid cannot read as syntax: no quotes, braces, %, backticks or newlines."""
    return _CHART_LABEL.sub("_", text)[:40] or "_"


def _paired(record: JobRecord | None) -> dict | None:
    """The paired sides a ``prbot bench run`` job's results hold, if that is what they are."""
    if record is None or not record.results:
        return None
    first = record.results[0]
    paired = first.get("paired") if isinstance(first, dict) else None
    return paired if isinstance(paired, dict) else None


def _comparisons(
    head: JobRecord, base_runs: Sequence[Mapping[str, float]] | None, factor: float, alpha: float
) -> list[dict[str, Any]]:
    if not head.results or not base_runs:
        return []
    samples = samples_from_runs(list(base_runs), list(head.results))
    return [c.to_json() for c in compare(samples, factor=factor, alpha=alpha)]


def _shared_lead(labels: Sequence[str]) -> str:
    """The first word every label starts with ("FLASHMLA" of "FLASHMLA 16q1s1k"), or ""."""
    leads = {label.split(" ", 1)[0] for label in labels}
    if len(leads) != 1 or any(" " not in label for label in labels):
        return ""
    return next(iter(leads))


def mermaid_chart(name: str, comparisons: Sequence[Mapping[str, Any]]) -> str:
    """An ``xychart-beta`` of head/base time ratios (1.0 = unchanged); labels whitelisted.

    Horizontal, so each configuration's label has a line of its own (side by side under
    vertical bars, a dozen batch specs overlapped at the comment's 780 px); a backend named
    on every label is said once, in the title; the ratio axis starts at 0.
    """
    shown = [c for c in comparisons if isinstance(c.get("ratio"), int | float)][:MAX_CHART_BARS]
    if not shown:
        return ""
    ratios = [float(c["ratio"]) for c in shown]
    configs = [str(c["config"]) for c in shown]
    lead = _shared_lead(configs)
    if lead:
        configs = [config[len(lead) + 1 :] for config in configs]
    labels = ", ".join(f'"{chart_label(config)}"' for config in configs)
    top = math.ceil(max(max(ratios), 1.1) * 10) / 10
    title = f"{chart_label(name)}, {chart_label(lead)}" if lead else chart_label(name)
    return "\n".join(
        [
            "xychart-beta horizontal",
            f'    title "{title}: head time / base time"',
            f"    x-axis [{labels}]",
            f'    y-axis "head time / base time (1 = unchanged)" 0 --> {top:.1f}',
            f"    bar [{', '.join(f'{r:.3f}' for r in ratios)}]",
            f"    line [{', '.join('1.000' for _ in ratios)}]",
        ]
    )


def _status_of(record: JobRecord | None, default: str) -> str:
    if record is None:
        return default
    return record.state


def _with_signal(finding: dict[str, Any], signal: Mapping[str, Any] | None) -> None:
    """A failed job's classification (``bot.jobs.ci_signal``) when one was made for it; a
    pass after prbot's retry is a flaky job's and is shown so."""
    if not signal:
        return
    classification = str(signal.get("classification") or "unknown")
    status = finding.get("status")
    if status not in CLASSIFIED and not (status == "passed" and classification == "flaky"):
        return
    finding["classification"] = classification
    finding["classification_reason"] = str(signal.get("reason") or "")
    finding["evidence"] = [dict(e) for e in (signal.get("evidence") or [])[:6]]
    finding["base_url"] = safe_url(str(signal.get("base_job_url") or ""))
    finding["base_branch"] = str(signal.get("branch") or "") or None


def signal_groups(findings: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Classified failures grouped as the comment shows them, new failures first."""
    groups = []
    for classification in SIGNAL_ORDER:
        jobs = [f for f in findings if f.get("classification") == classification]
        if jobs:
            groups.append({"classification": classification, "jobs": jobs})
    return groups


def overlay(
    section: Section,
    records: Sequence[JobRecord],
    *,
    reused_base: Mapping[str, JobRecord] | None = None,
    factor: float = DEFAULT_FACTOR,
    alpha: float = DEFAULT_ALPHA,
    allow_different_gpus: bool = False,
    fail_on: Sequence[str] = DEFAULT_FAIL_ON,
) -> Section:
    """``section`` with each finding's status, link and benchmark comparisons from records,
    and each failed job's classification; only failures in ``fail_on`` (or not classified)
    fail it."""
    if not section.findings:
        return section
    by_key = {(r.key.name, r.key.side): r for r in records}
    findings = []
    benchmarks = []
    for finding in section.findings:
        name = str(finding.get("name"))
        record = by_key.get((name, "head"))
        updated = dict(finding)
        updated["status"] = _status_of(record, str(finding.get("status")))
        if record is not None:
            updated["url"] = safe_url(record.job_url or record.build_url)
            updated["error"] = record.error
            updated["attempt"] = record.attempt
            _with_signal(updated, record.signal)
        paired = _paired(record)
        if finding.get("kind") == BENCHMARK and paired is not None:
            result = judge(
                paired, factor=factor, alpha=alpha, allow_different_gpus=allow_different_gpus
            )
            comparisons = [c.to_json() for c in result.comparisons]
            updated["comparisons"] = comparisons
            updated["base_status"] = None
            benchmarks.append(
                {
                    "name": name,
                    "rows": comparisons[:MAX_TABLE_ROWS],
                    "more": max(len(comparisons) - MAX_TABLE_ROWS, 0),
                    # A chart adds nothing to a table of a few rows.
                    "chart": mermaid_chart(name, comparisons) if len(comparisons) >= 4 else "",
                    # A backends job runs both sides on the head: no base commit to name.
                    "base_sha": (
                        str(record.spec.get("base_sha") or "")
                        if record.spec.get("compare", "base") == "base"
                        else ""
                    ),
                    "runs": f"{result.rounds} paired rounds (ABBA, one GPU)",
                    "what": headline(result),
                    "factor": factor,
                }
            )
        elif finding.get("kind") == BENCHMARK and record is not None:
            base = by_key.get((name, "base")) or (reused_base or {}).get(name)
            base_runs = base.results if base is not None and base.state == "passed" else None
            comparisons = _comparisons(record, base_runs, factor, alpha)
            updated["comparisons"] = comparisons
            updated["base_status"] = base.state if base is not None else None
            if comparisons:
                benchmarks.append(
                    {
                        "name": name,
                        "rows": comparisons[:MAX_TABLE_ROWS],
                        "more": max(len(comparisons) - MAX_TABLE_ROWS, 0),
                        "chart": mermaid_chart(name, comparisons),
                        "base_sha": base.commit_sha if base is not None else "",
                        "runs": finding_runs(record, base),
                        "factor": factor,
                    }
                )
        findings.append(updated)
    status, summary = summarize(findings, section, fail_on=fail_on)
    data = {
        **section.data,
        "benchmarks": benchmarks,
        "pending": pending(findings),
        "signal": signal_groups(findings),
    }
    return Section(section.check, status, summary, findings, data)


def finding_runs(head: JobRecord, base: JobRecord | None) -> str:
    head_runs = len(head.results or [])
    base_runs = len(base.results or []) if base is not None else 0
    return f"{base_runs} base, {head_runs} head"


def pending(findings: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a job is still to finish (the check run stays in progress meanwhile)."""
    return any(
        f.get("status") in ACTIVE or (f.get("kind") == BENCHMARK and f.get("base_status") in ACTIVE)
        for f in findings
    )


def blocking(finding: Mapping[str, Any], fail_on: Sequence[str]) -> bool:
    """Whether a finished job fails the check: it failed, and it was not classified, or its
    classification is one the rules fail on (``checks.jobs.ci_signal.fail_on``)."""
    if finding.get("status") not in FAILING:
        return False
    classification = finding.get("classification")
    return classification is None or classification in fail_on


def summarize(
    findings: Sequence[Mapping[str, Any]],
    section: Section,
    *,
    fail_on: Sequence[str] = DEFAULT_FAIL_ON,
) -> tuple[Status, str]:
    states = [str(f.get("status")) for f in findings]
    if all(s in ("selected", "awaiting_approval") for s in states):
        return section.status, section.summary  # nothing dispatched: the check's own words
    counts: dict[str, int] = {}
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    order = ("failed", "timed_out", "canceled", "running", "queued", "passed", "selected")
    words = {"timed_out": "timed out", "awaiting_approval": "awaiting approval"}
    parts = [f"{counts[s]} {words.get(s, s)}" for s in order if counts.get(s)]
    if counts.get("awaiting_approval"):
        parts.append(f"{counts['awaiting_approval']} awaiting approval")
    verdicts = [
        c.get("verdict")
        for f in findings
        for c in f.get("comparisons") or []
        if isinstance(c, dict)
    ]
    regressions = verdicts.count(REGRESSION)
    improvements = verdicts.count(IMPROVEMENT)
    unclear = verdicts.count(INCONCLUSIVE) + verdicts.count(FAILED)
    if verdicts:
        bench = [f"{regressions} regression{'s' if regressions != 1 else ''}"]
        if improvements:
            bench.append(f"{improvements} faster")
        if unclear:
            bench.append(f"{unclear} inconclusive")
        parts.append("benchmarks: " + ", ".join(bench))
    classified = [str(f["classification"]) for f in findings if f.get("classification")]
    if classified:
        named = [
            f"{classified.count(c)} {c.replace('_', ' ')}" for c in SIGNAL_ORDER if c in classified
        ]
        parts.append("failures: " + ", ".join(named))
    machines = ", ".join(dict.fromkeys(job_device(f) for f in findings))
    summary = f"GPU jobs on {machines}: " + ", ".join(parts)
    if any(blocking(f, fail_on) for f in findings):
        return Status.FAIL, summary
    if any(s in FAILING for s in states):
        return Status.WARN, summary
    if regressions or counts.get("awaiting_approval"):
        return Status.WARN, summary
    return Status.PASS, summary
