"""Logging for the long-running processes: text lines, or one JSON object a line
(``PRBOT_LOG_FORMAT=json``) carrying the delivery, repository, PR, head and job of the work
being done, and never a credential.

Fields come from a context (``with log_fields(repo=..., pr=...)``) set where a job starts,
so every line logged while it runs, by prbot or by the libraries under it, says what it was
for. Every record is scrubbed before it is written: installation tokens, JWTs, PEM keys,
``Authorization`` values, git's ``x-access-token`` credential and the configured secrets.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

FIELDS = ("delivery_id", "repo", "pr", "head", "job_id", "job_kind")
MAX_MESSAGE_CHARS = 8000
REDACTED = "[redacted]"

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "prbot_log_fields", default=None
)

CREDENTIALS = re.compile(
    "|".join(
        [
            r"\bgh[pousr]_[A-Za-z0-9_]{20,}",  # installation, OAuth, user and refresh tokens
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWTs (App auth)
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
            r"(?i:\b(?:authorization|proxy-authorization)[\"']?\s*[:=]\s*[\"']?"
            r"(?:token|bearer|basic)\s+[A-Za-z0-9._~+/=-]+)",
            r"(?i:x-access-token:[^@\s\"']+)",
        ]
    )
)


@contextmanager
def log_fields(**fields: Any) -> Iterator[dict[str, Any]]:
    """Attach ``fields`` (None values dropped) to every record logged inside the block.

    Yields the block's fields; :func:`learn_fields` adds to them, so a line logged with them
    after the block (a job's "done") names what the work learned while it ran."""
    current = dict(_context.get() or {})
    current.update({k: v for k, v in fields.items() if v is not None})
    token = _context.set(current)
    try:
        yield current
    finally:
        _context.reset(token)


def learn_fields(**fields: Any) -> None:
    """Add ``fields`` (None values dropped) to the innermost block's, from here to its end:
    a pipeline queued without its head (a /recheck, a re-run) learns it from GitHub."""
    current = _context.get()
    if current is not None:
        current.update({k: v for k, v in fields.items() if v is not None})


def job_fields(job_id: int, kind: str, payload: Any) -> dict[str, Any]:
    """The log fields of one queue job, from what its payload names."""
    fields: dict[str, Any] = {"job_id": job_id, "job_kind": kind}
    if not isinstance(payload, dict):
        return fields
    pull = payload.get("pull") if isinstance(payload.get("pull"), dict) else {}
    head = pull.get("head_sha") or (pull.get("head") or {}).get("sha")
    candidates = {
        "delivery_id": payload.get("delivery_id"),
        "repo": payload.get("repo"),
        "pr": payload.get("number") or pull.get("number"),
        "head": head,
    }
    fields.update({k: v for k, v in candidates.items() if isinstance(v, (str, int))})
    return fields


def delivery_fields(repo: str | None, payload: Any) -> dict[str, Any]:
    """The log fields a stored delivery names: repository, PR number and head."""
    if not isinstance(payload, dict):
        return {"repo": repo} if repo else {}
    pull = payload.get("pull_request") if isinstance(payload.get("pull_request"), dict) else {}
    issue = payload.get("issue") if isinstance(payload.get("issue"), dict) else {}
    head = (pull.get("head") or {}).get("sha") if isinstance(pull.get("head"), dict) else None
    number = pull.get("number") or issue.get("number")
    fields = {"repo": repo, "pr": number, "head": head}
    return {k: v for k, v in fields.items() if isinstance(v, (str, int))}


class Redactor(logging.Filter):
    """Rewrites each record's message with credentials replaced; never drops a record."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        # Short values would redact ordinary words; a real secret is long.
        self.secrets = sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        text = CREDENTIALS.sub(REDACTED, text)
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string must not lose the record
            message = f"{record.msg!r} {record.args!r}"
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = self.scrub(message)[:MAX_MESSAGE_CHARS], None
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        record.exc_info = None  # formatted (and scrubbed) above
        for name, value in (_context.get() or {}).items():
            setattr(record, f"prbot_{name}", value)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, f"prbot_{name}", None)
            if value is None:
                value = getattr(record, name, None)  # logger.info(..., extra={"repo": ...})
            if isinstance(value, (str, int)):
                line[name] = value
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = " ".join(
            f"{name}={getattr(record, f'prbot_{name}')}"
            for name in FIELDS
            if getattr(record, f"prbot_{name}", None) is not None
        )
        return f"{text} [{context}]" if context else text


def configure(level: str | int = "WARNING", fmt: str = "text", secrets: Iterable[str] = ()) -> None:
    """Route every logger to stderr in ``fmt``, through the redactor. Like basicConfig, a
    root logger that already has handlers (an embedding program, pytest) keeps them; they
    get the redactor."""
    root = logging.getLogger()
    root.setLevel(level)
    redactor = Redactor(secrets)
    if root.handlers:
        for existing in root.handlers:
            if not any(isinstance(f, Redactor) for f in existing.filters):
                existing.addFilter(redactor)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(redactor)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
