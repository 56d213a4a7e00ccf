"""Shared by the sandbox tests: finding a process by the marker in its argv."""

from __future__ import annotations

from pathlib import Path


def processes_named(marker: str) -> list[int]:
    """Live (not zombie) processes whose argv[0] is ``marker``, on the whole host: in the
    sandbox's PID namespace a process's own pid means nothing outside it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0]
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv0 == marker.encode() and state != "Z":
            found.append(int(entry.name))
    return found
