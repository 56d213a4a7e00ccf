"""Check-run annotations: every finding that names a file and a line at the PR's head.

GitHub shows an annotation next to that line in "Files changed". It takes at most 50 per
request, so :func:`batches` splits them; each batch is one check-run update.

GitHub shows an annotation's title and message as plain text: no Markdown, no HTML, no
mentions (Actions' compiler annotations show ``std::vector<int>`` as written). So the text
is not Markdown- or HTML-escaped (that would show ``&gt;=`` literally, as it did
on a real vLLM diff); it is made plain instead: control characters and zero-width
characters removed, one line, bounded in length.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

from bot.checks import Section, Status
from bot.report.render import Report

# GitHub's documented cap per create/update request.
ANNOTATIONS_PER_REQUEST = 50
# A report with thousands of located findings gets the strongest ones (findings are ordered
# strongest first); the comment and the JSON report still hold all of them.
MAX_ANNOTATIONS = 500
MAX_MESSAGE_CHARS = 1_000
MAX_TITLE_CHARS = 200

LEVELS = {Status.FAIL: "failure", Status.ERROR: "failure", Status.WARN: "warning"}


def _located(finding: dict[str, Any]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(path, line, the part of the finding that named them), head side only."""
    path = finding.get("path") or finding.get("file")
    line = finding.get("line")
    if _usable(path, line) and finding.get("side", "head") == "head":
        yield path, line, finding
    # Requirement findings name their lines one level down (a changed pin, a problem).
    for key in ("changed", "problems"):
        for part in finding.get(key) or []:
            if not isinstance(part, dict):
                continue
            path, line = part.get("file") or part.get("path"), part.get("line")
            if _usable(path, line) and part.get("side", "head") == "head":
                yield path, line, part


def _usable(path: object, line: object) -> bool:
    return (
        isinstance(path, str)
        and bool(path)
        and not path.startswith("/")
        and isinstance(line, int)
        and not isinstance(line, bool)
        and line >= 1
    )


def _message(section: Section, finding: dict[str, Any], part: dict[str, Any]) -> str:
    if section.check == "integration" and finding.get("symbol"):
        missing = ", ".join(str(p) for p in finding.get("missing_in") or [])
        where = finding.get("where") or "the expected places"
        return f"{finding['symbol']} is not yet in {where}" + (f" ({missing})" if missing else "")
    if part is not finding and part.get("name") and "to" in part:
        return f"{part['name']}: {part.get('from') or 'none'} → {part.get('to') or 'none'}"
    for key in ("message", "why", "detail"):
        if part.get(key):
            return str(part[key])
    return section.summary


_NOT_PLAIN = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]+")


def plain_text(text: str, limit: int) -> str:
    """One line of plain text: no control, bidi or zero-width characters; at most ``limit``."""
    text = re.sub(" {2,}", " ", _NOT_PLAIN.sub(" ", str(text))).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def annotations_for(report: Report, titles: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One annotation per located finding (deduplicated), level from its section's status."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int, str]] = set()
    for section in report.sections:
        level = LEVELS.get(section.status, "notice")
        title = (titles or {}).get(section.check, section.check)
        for finding in section.findings:
            if not isinstance(finding, dict):
                continue
            for path, line, part in _located(finding):
                message = plain_text(_message(section, finding, part), MAX_MESSAGE_CHARS)
                if (path, line, message) in seen:
                    continue
                seen.add((path, line, message))
                out.append(
                    {
                        "path": path,
                        "start_line": line,
                        "end_line": line,
                        "annotation_level": level,
                        "title": plain_text(f"prbot: {title}", MAX_TITLE_CHARS),
                        "message": message,
                    }
                )
                if len(out) >= MAX_ANNOTATIONS:
                    return out
    return out


def batches(annotations: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    size = ANNOTATIONS_PER_REQUEST
    return [annotations[i : i + size] for i in range(0, len(annotations), size)]


def batch_digest(batch: list[dict[str, Any]]) -> str:
    """A stable name for one batch: a replayed job recognises the batches it already sent."""
    return hashlib.sha256(json.dumps(batch, sort_keys=True).encode()).hexdigest()[:16]
