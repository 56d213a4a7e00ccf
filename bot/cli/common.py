"""Helpers shared by the subcommands: errors, progress lines, JSONL reading."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit code 2 unless told otherwise."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def progress(message: str) -> None:
    """A progress line on stderr, so stdout stays clean for the report."""
    print(f"prbot: {message}", file=sys.stderr, flush=True)


@contextmanager
def step(message: str) -> Iterator[None]:
    """Announce a step that may take a while, then say how long it took."""
    started = time.monotonic()
    progress(f"{message}…")
    yield
    progress(f"{message}: done in {time.monotonic() - started:.1f}s")
