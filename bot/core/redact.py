"""Tokens and signed URLs kept out of logs.

httpx logs every request's URL at INFO. Buildkite's artifact downloads redirect to storage
URLs whose query strings are credentials (a signature valid for minutes), and an operator's
engine token must never reach a log either. The filter rewrites each record of the loggers
it is installed on: query strings become ``?…`` and known secrets ``***``.
"""

from __future__ import annotations

import logging
import re
import threading

_QUERY = re.compile(r"(https?://[^\s?\"'<>]+)\?[^\s\"'<>]*")
# A logger's filters see only the records made on it, so httpcore's children are named.
REDACTED_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
)


class RedactingFilter(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def redact(self, text: str) -> str:
        text = _QUERY.sub(r"\1?…", text)
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


_FILTER = RedactingFilter()
_LOCK = threading.Lock()


def redact_secrets(*secrets: str | None) -> RedactingFilter:
    """Install the filter (once) on the HTTP loggers and add ``secrets`` to what it hides."""
    with _LOCK:
        _FILTER.secrets.update(s for s in secrets if s and len(s) >= 4)
        for name in REDACTED_LOGGERS:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
    return _FILTER
