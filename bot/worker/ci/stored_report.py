"""A head's whole report as JSON (sections with their template data) and back.

The contract's JSON report drops each section's ``data`` (what its template draws besides
the findings). To re-render the comment when a job finishes, without running the checks
again, the jobs handlers keep the whole thing; values JSON has no word for (sets, paths,
dataclasses) are kept as the nearest JSON a template reads the same way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from bot.core.sections import Section, Status
from bot.jobs.compare import DEFAULT_ALPHA, DEFAULT_FACTOR
from bot.jobs.progress import DEFAULT_FAIL_ON, overlay
from bot.jobs.records import JobRecord
from bot.jobs.repository_builds import SeenStep, annotate
from bot.report.render import Report

JOBS_CHECK = "jobs"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if isinstance(value, PurePath):
        return str(value)
    return str(value)


def report_to_json(report: Report) -> dict[str, Any]:
    sections = [
        {
            "check": s.check,
            "status": str(s.status),
            "summary": s.summary,
            "findings": s.findings,
            "data": s.data,
        }
        for s in report.sections
    ]
    whole = {
        "repo": report.repo,
        "pr": report.pr,
        "head_sha": report.head_sha,
        "base_sha": report.base_sha,
        "sections": sections,
    }
    return json.loads(json.dumps(whole, default=_plain))


def report_from_json(data: Mapping[str, Any]) -> Report:
    return Report(
        str(data["repo"]),
        data.get("pr"),
        str(data["head_sha"]),
        str(data.get("base_sha") or ""),
        [
            Section(
                str(s["check"]),
                Status(s["status"]),
                str(s.get("summary") or ""),
                list(s.get("findings") or []),
                dict(s.get("data") or {}),
            )
            for s in data.get("sections") or []
        ],
    )


def jobs_section(report: Report) -> Section | None:
    return next((s for s in report.sections if s.check == JOBS_CHECK), None)


def with_job_progress(
    report: Report,
    records: Sequence[JobRecord],
    *,
    reused_base: Mapping[str, JobRecord] | None = None,
    factor: float = DEFAULT_FACTOR,
    alpha: float = DEFAULT_ALPHA,
    allow_different_gpus: bool = False,
    fail_on: Sequence[str] = DEFAULT_FAIL_ON,
    repository: Mapping[str, SeenStep] | None = None,
    notes: Sequence[str] = (),
    dispatching: bool = True,
) -> Report:
    """The report with its jobs section redrawn from the records and the repository's own
    builds of the head (a source of their own, never prbot's results); the rest as it was."""
    sections = [
        annotate(
            overlay(
                s,
                records,
                reused_base=reused_base,
                factor=factor,
                alpha=alpha,
                allow_different_gpus=allow_different_gpus,
                fail_on=fail_on,
            ),
            repository or {},
            notes,
            dispatching=dispatching,
        )
        if s.check == JOBS_CHECK
        else s
        for s in report.sections
    ]
    return Report(report.repo, report.pr, report.head_sha, report.base_sha, sections)


def as_advisory(report: Report, dispatching: bool) -> Report:
    """The report as the check made it, with the jobs section saying when prbot dispatches
    nothing here (before the repository's builds were read)."""
    if dispatching:
        return report
    sections = [
        annotate(s, {}, (), dispatching=False) if s.check == JOBS_CHECK else s
        for s in report.sections
    ]
    return Report(report.repo, report.pr, report.head_sha, report.base_sha, sections)
