"""Records and constants shared by the duplicates tests."""

from __future__ import annotations

import json
from pathlib import Path

REPO = "acme/engine"
REGISTRY = "vllm/v1/attention/backends/registry.py"
PATCH = '@@ -58,3 +58,4 @@\n ctx\n+    TOKENSPEED_MLA = "x.TokenSpeedBackend"\n'


def write_export(path: Path, lines: list[object]) -> Path:
    raw = b""
    for line in lines:
        raw += (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
    path.write_bytes(raw)
    return path


def sample_records() -> list[object]:
    files = [{"path": REGISTRY, "additions": 1, "deletions": 0, "patch": PATCH}]
    return [
        {"number": 1, "title": "Add TokenSpeed MLA backend", "author": "a", "files": files},
        {"number": 2, "title": "Integrate tokenspeed decode", "author": "b", "files": files},
        {"number": 3, "title": "Docs: typo", "body": "", "author": "c"},
        {"number": 4, "title": "[Bug] Crash with EAGLE3 drafter and cuda graphs"},
        {
            "number": 5,
            "title": "Fix eagle3 drafter illegal memory access with cudagraphs",
            "state": "closed",  # the sweep ranks every PR in the file; the check only open ones
        },
    ]
