"""The requirements side of autofix: a compiled file whose re-run by uv differs becomes a
patch in the report, and that patch, applied as autofix applies it, gives uv's file."""

from __future__ import annotations

import pytest
from test_requirements_staleness import FILES, HEADER, RULES

from bot import rules as rules_module
from bot.checks.base import CheckContext, MemoryCache
from bot.checks.requirements import run
from bot.fixes.plan import fixes_in
from bot.fixes.push import build_commit
from bot.gitrepo import run_git
from bot.report import Report
from bot.requirements.localwheels import write_index
from bot.sandbox import SandboxRunner
from bot.snapshot import snapshot_from_checkout

COMPILED = "requirements/test/cuda.txt"


@pytest.fixture
def wheels(tmp_path):
    return write_index(
        tmp_path / "wheels",
        {"torch": {"2.11.0": []}, "numpy": {"1.0": []}, "pytest-lite": {"1.0": []}},
    )


def test_a_recompiled_file_is_a_fix_that_applies(tmp_path, make_repo, wheels):
    committed = HEADER.replace("aarch64", "x86_64").replace(" --python-version 3.11", "") + (
        "pytest-lite==1.0\n    # via -r requirements/test/cuda.in\n"
        "torch==2.11.0\n    # via\n    #   -c requirements/cuda.txt\n"
        "    #   -r requirements/test/cuda.in\n"
    )
    repo = make_repo()
    base = repo.commit({**FILES, COMPILED: committed})
    # pytest-lite dropped from the input: the committed file still pins it.
    head = repo.commit({"requirements/test/cuda.in": "torch\n"})
    path = tmp_path / "rules.yaml"
    path.write_text(RULES.format(wheels=wheels, extra="    rerun_compiled: true"))
    ruleset = rules_module.load_file(path).checks.requirements
    work = tmp_path / "work"
    work.mkdir()
    context = CheckContext(work_dir=work, runner=SandboxRunner(timeout=60), cache=MemoryCache())
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run(snapshot, ruleset, context)
    report = Report("o/r", 1, head, base, [section]).to_json()
    [fix] = fixes_in(report)
    assert (fix.kind, fix.path) == ("requirements", COMPILED)
    assert fixes_in(report, ["docs"]) == []
    sha = build_commit(
        repo.path, head, [fix], "fix\n", author=("prbot[bot]", "bot@example"), timestamp=1
    )
    fixed = run_git(repo.path, ["show", f"{sha}:{COMPILED}"]).decode()
    assert fixed.startswith(
        HEADER.replace("aarch64", "x86_64").replace(" --python-version 3.11", "")
    )
    assert "pytest-lite" not in fixed.split("\n", 2)[2] and "torch==2.11.0" in fixed
    assert str(tmp_path) not in fixed
