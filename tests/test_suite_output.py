"""`pytest -q` without PostgreSQL: a count and one line saying why, never a list of skips.

Run in-process (pytester) on a stand-in file whose tests skip as the PostgreSQL variants do,
with this suite's own ``addopts`` and summary hook.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
STAND_IN = """
import pytest

@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_store(backend):
    if backend == "postgres":
        pytest.skip("PRBOT_TEST_DATABASE_URL is not set")

def test_other():
    pytest.skip("not this machine")
"""


# The suite's own conftest, loaded under another name (the stand-in's is "conftest" too).
SUITE_HOOK = """
import importlib.util

spec = importlib.util.spec_from_file_location("prbot_suite_conftest", r"{path}")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_terminal_summary = suite.pytest_terminal_summary
"""


def test_skipped_postgres_variants_are_one_line(pytester):
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"][
        "addopts"
    ]
    pytester.makeini(f"[pytest]\naddopts = {addopts}\n")
    pytester.makeconftest(SUITE_HOOK.format(path=ROOT / "tests" / "conftest.py"))
    pytester.makepyfile(test_stand_in=STAND_IN)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=2)
    lines = [line for line in result.outlines if line.strip()]
    assert not any(line.startswith("SKIPPED") for line in lines), lines
    assert "1 PostgreSQL variants skipped: set PRBOT_TEST_DATABASE_URL to run them" in lines
    assert len(lines) <= 3, lines
