"""The report for one PR head, and how it is rendered: JSON, or the Markdown comment.

The checks are run by ``bot.report.runner``; this module only holds their result and renders it.

Rendering goes through Jinja2 templates in ``templates/``. Every value a template prints is
escaped as Markdown-safe text unless the code marked it safe, so what users wrote cannot
inject markup, mentions or links.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from bot.checks import Section, Status, all_checks
from bot.checks.base import STATUS_SEVERITY
from bot.core.difference import differing
from bot.core.markdown import (
    code_block,
    code_span,
    escape_text,
    html_code,
    html_text,
    truncate_markdown,
)
from bot.core.paths import templates_dir

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
    env.filters["spans"] = text_with_spans
    # Two sides of a long Before/After pair, cut where they differ (a tuple of two).
    env.filters["differing"] = differing
    # Inside a one-line <summary> GitHub parses no Markdown: these escape HTML only.
    env.filters["html"] = html_text
    env.filters["html_code"] = html_code
    env.filters["short_sha"] = lambda sha: (sha or "")[:7]
    env.globals["status_icon"] = status_icon
    return env


# Buildkite's emoji (":nvidia:", ":rocm:") are no GitHub emoji: in a comment they are text.
_SHORTCODE = re.compile(r":[a-z0-9_+-]+:\s*")


def text_with_spans(value: Any) -> Markup:
    """Plain text whose `quoted` parts (paths in problems: "`a.py` does not parse") become
    code spans instead of escaped, literal backticks; everything else is escaped text."""
    text = _SHORTCODE.sub("", str(value)).strip() or str(value)
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: all of it is text
        return escape_text(text)
    return Markup("").join(
        code_span(part) if index % 2 else escape_text(part) for index, part in enumerate(parts)
    )


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
    """The sticky comment body: marker, status line, one folded section per check.

    Each section's details get a fair share of GitHub's comment limit, so one check with
    thousands of findings cannot push the others' details out of the comment.
    """
    env = template_environment()
    sections = _status_items(report)
    bodies = [_render_body(env, item, report, html_base) for item in sections]

    def render(parts: list[str]) -> str:
        for item, body in zip(sections, parts, strict=True):
            item["body"] = Markup(body)
        return env.get_template("report.md.j2").render(
            report=report,
            sections=sections,
            marker=Markup(MARKER),
            head_marker=Markup(head_marker(report.head_sha)),
            summary_line=render_summary_line(report),
            html_base=html_base,
        )

    if sum(len(body) for body in bodies) > MAX_COMMENT_CHARS // 2:
        frame = len(render(["x"] * len(bodies)))  # every fold drawn, no details in it
        budget = MAX_COMMENT_CHARS - frame - 200
        shares = fair_shares([len(body) for body in bodies], budget)
        bodies = [
            truncate_markdown(
                body,
                share,
                f"…{item['title']}: {len(body) - share:,} more characters of details not shown; "
                "the JSON report (prbot check --format json) has every finding.",
            )
            if len(body) > share
            else body
            for item, body, share in zip(sections, bodies, shares, strict=True)
        ]
    text = render(bodies)
    # The last resort (a frame alone over the limit): still closes what the cut leaves open.
    return truncate_markdown(
        text, MAX_COMMENT_CHARS, "…report truncated to fit GitHub's comment size limit."
    )


def _status_items(report: Report) -> list[dict[str, Any]]:
    checks = {c.name: c for c in all_checks()}
    return [
        {
            "section": section,
            "check": checks.get(section.check),
            "title": checks[section.check].title if section.check in checks else section.check,
            "summary": summary_markup(section),
            "body": Markup(""),
        }
        for section in report.sections
    ]


def _render_body(env: Environment, item: dict[str, Any], report: Report, html_base: str) -> str:
    check, section = item["check"], item["section"]
    if check is None or not check.template or not (section.data or section.findings):
        return ""
    if section.status == Status.SKIP:
        return ""  # its status line says all a skipped section has: no fold under it
    try:
        return env.get_template(check.template).render(
            section=section, report=report, html_base=html_base
        )
    except Exception as exc:  # noqa: BLE001 - a template bug must not lose the report
        log.error("template %s failed: %s", check.template, exc)
        return str(escape_text(f"(details could not be rendered: {exc})"))


def fair_shares(sizes: list[int], budget: int) -> list[int]:
    """Split ``budget`` so small parts keep all they need and large ones share the rest."""
    shares = [0] * len(sizes)
    remaining = max(budget, 0)
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    for position, index in enumerate(order):
        shares[index] = min(sizes[index], remaining // (len(sizes) - position))
        remaining -= shares[index]
    return shares


def render_status_lines(report: Report) -> str:
    """One line per section (icon, title, escaped summary): the check run's summary."""
    env = template_environment()
    return env.get_template("report_status.md.j2").render(sections=_status_items(report))


def summary_markup(section: Section) -> Markup:
    """The escaped summary, where ``#N`` links again when N is a PR the findings name.

    Escaping breaks every ``#N`` so user text cannot cross-reference issues; numbers that
    come from the check's own findings (integers, not text) are safe to link.
    """
    text = str(escape_text(section.summary))
    numbers = {
        str(f["number"])
        for f in section.findings
        if isinstance(f.get("number"), int) and not isinstance(f.get("number"), bool)
    }
    # Whole numbers only: finding #1 must not re-link the "#12" a user wrote.
    return Markup(
        re.sub("#\u200d(\\d+)(?!\\w)", lambda m: f"#{m[1]}" if m[1] in numbers else m[0], text)
    )


def render_summary_line(report: Report) -> str:
    """One line for the check run title and logs, e.g. '1 fail, 3 pass'."""
    order = sorted(STATUS_SEVERITY, key=STATUS_SEVERITY.__getitem__, reverse=True)
    counts = report.counts()
    parts = [f"{counts[str(s)]} {s}" for s in order if counts.get(str(s))]
    return ", ".join(parts) or "no checks ran"
