"""Runs the checks over one snapshot and renders the result as JSON or a Markdown comment.

Rendering goes through Jinja2 templates in ``templates/``. Every value a template prints is
escaped as Markdown-safe text unless the code marked it safe, so what users wrote cannot
inject markup, mentions or links.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from bot.checks import Check, CheckContext, Section, Status, all_checks
from bot.checks.base import STATUS_SEVERITY
from bot.markdown import code_block, code_span, escape_text
from bot.paths import templates_dir
from bot.snapshot import Snapshot

log = logging.getLogger(__name__)

REPORT_VERSION = 1
MARKER = "<!-- prbot:report -->"
# GitHub rejects comment bodies over 65,536 characters.
MAX_COMMENT_CHARS = 65_000


@dataclass
class Report:
    repo: str
    pr: int | None
    head_sha: str
    base_sha: str
    sections: list[Section] = field(default_factory=list)

    @property
    def status(self) -> Status:
        ran = [s.status for s in self.sections]
        return max(ran, key=lambda s: STATUS_SEVERITY[s]) if ran else Status.SKIP

    def to_json(self) -> dict[str, Any]:
        return {
            "version": REPORT_VERSION,
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "sections": [s.to_json() for s in self.sections],
        }

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for section in self.sections:
            out[str(section.status)] = out.get(str(section.status), 0) + 1
        return out


def run_check(check: Check, snapshot: Snapshot, rules: Any, context: CheckContext) -> Section:
    """Run one check; whatever it raises becomes an ``error`` section, never a crash."""
    check_rules = getattr(rules.checks, check.name)
    if not check_rules.enabled:
        return Section(check.name, Status.SKIP, "disabled by rules")
    try:
        section = check.run(snapshot, check_rules, context)
    except Exception as exc:  # noqa: BLE001 - one check failing must not stop the others
        log.error(
            "check %s failed on %s@%s\n%s",
            check.name,
            snapshot.repo,
            snapshot.head_sha,
            traceback.format_exc(),
        )
        return Section(check.name, Status.ERROR, f"check crashed: {type(exc).__name__}: {exc}")
    if not isinstance(section, Section):
        return Section(check.name, Status.ERROR, "check returned no section")
    return section


def build_report(
    snapshot: Snapshot,
    rules: Any,
    context: CheckContext,
    checks: tuple[Check, ...] | None = None,
) -> Report:
    report = Report(snapshot.repo, snapshot.number, snapshot.head_sha, snapshot.base_sha)
    for check in checks if checks is not None else all_checks():
        report.sections.append(run_check(check, snapshot, rules, context))
    return report


def _finalize(value: Any) -> Any:
    # Runs on every {{ expression }}: user text becomes inert Markdown unless marked safe.
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Markup(value)  # numbers carry no markup, and "0.99" must stay "0.99"
    return escape_text(value)


@cache
def template_environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_finalize,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["code"] = code_span
    env.filters["codeblock"] = code_block
    env.filters["text"] = escape_text
    env.filters["short_sha"] = lambda sha: (sha or "")[:7]
    env.globals["status_icon"] = status_icon
    return env


STATUS_ICONS = {
    Status.PASS: "✅",
    Status.WARN: "⚠️",
    Status.FAIL: "❌",
    Status.ERROR: "💥",
    Status.SKIP: "⏭️",
}


def status_icon(status: Status | str) -> Markup:
    return Markup(STATUS_ICONS.get(Status(status), "•"))


def head_marker(head_sha: str) -> str:
    return f"<!-- prbot:head={head_sha} -->"


def render_markdown(report: Report, *, html_base: str = "https://github.com") -> str:
    """The sticky comment body: marker, status line, one folded section per check."""
    env = template_environment()
    checks = {c.name: c for c in all_checks()}
    sections = []
    for section in report.sections:
        check = checks.get(section.check)
        body = ""
        if check is not None and check.template and (section.data or section.findings):
            try:
                body = env.get_template(check.template).render(
                    section=section, report=report, html_base=html_base
                )
            except Exception as exc:  # noqa: BLE001 - a template bug must not lose the report
                log.error("template %s failed: %s", check.template, exc)
                body = str(escape_text(f"(details could not be rendered: {exc})"))
        sections.append(
            {
                "section": section,
                "title": check.title if check else section.check,
                "summary": summary_markup(section),
                "body": Markup(body),
            }
        )
    text = env.get_template("report.md.j2").render(
        report=report,
        sections=sections,
        marker=Markup(MARKER),
        head_marker=Markup(head_marker(report.head_sha)),
        summary_line=render_summary_line(report),
        html_base=html_base,
    )
    if len(text) > MAX_COMMENT_CHARS:
        cut = text[: MAX_COMMENT_CHARS - 200]
        # Close any open fold so the truncated comment still renders.
        opened = cut.count("<details>") - cut.count("</details>")
        text = (
            cut
            + "\n\n…report truncated to fit GitHub's comment size limit.\n"
            + ("</details>\n" * max(opened, 0))
        )
    return text


def summary_markup(section: Section) -> Markup:
    """The escaped summary, where ``#N`` links again when N is a PR the findings name.

    Escaping breaks every ``#N`` so user text cannot cross-reference issues; numbers that
    come from the check's own findings (integers, not text) are safe to link.
    """
    text = str(escape_text(section.summary))
    numbers = {f.get("number") for f in section.findings if isinstance(f.get("number"), int)}
    for number in numbers:
        text = text.replace(f"#\u200d{number}", f"#{number}")
    return Markup(text)


def render_summary_line(report: Report) -> str:
    """One line for the check run title and logs, e.g. '1 fail, 3 pass'."""
    order = [Status.ERROR, Status.FAIL, Status.WARN, Status.PASS, Status.SKIP]
    counts = report.counts()
    parts = [f"{counts[str(s)]} {s}" for s in order if counts.get(str(s))]
    return ", ".join(parts) or "no checks ran"
