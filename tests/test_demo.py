"""`prbot demo` as a newcomer runs it: a subprocess, no credentials, a comment printed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bot.report.render import MARKER


@pytest.mark.slow
def test_demo_prints_the_posted_comment(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "bot", "demo", "--keep", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(MARKER)
    # The second contributor's PR names the first as the same work, with code evidence.
    assert "Likely duplicates" in result.stdout
    assert "both add `TOKENSPEED_MLA`" in result.stdout
    # ...and what reviewers asked for by hand on vLLM's PR: the wiring it still lacks.
    assert "- `TOKENSPEED_MLA`, introduced at " in result.stdout
    assert "  - CUDA priority lists" in result.stdout
    assert "webhook answered 202" in result.stderr
    # The GPU jobs: a Blackwell-only backend gets the B200 step and its MLA decode benchmark,
    # dispatched after a maintainer's /approve-gpu, finished by the local Buildkite's webhooks.
    assert (
        "[✅ passed](" in result.stdout
        and "Not chosen for this hardware: v1-attention-h100" in (result.stdout)
    )
    assert "| Configuration | Base (ms) | Head (ms) | Head / base |" in result.stdout
    # TOKENSPEED_MLA is new: its one job times it against the incumbents the demo's CUDA
    # priority list picks at SM100, on the same head (the demo's agent makes it 10% slower).
    assert "measured against CUTLASS\\_MLA, FLASHINFER\\_MLA on this head" in result.stdout
    assert "head (TOKENSPEED\\_MLA) against base (CUTLASS\\_MLA)" in result.stdout
    assert "| 16q1s1k |" in result.stdout and "❌ regression" in result.stdout
    assert "\nWhy:\n- 16q1s1k: 9" in result.stdout
