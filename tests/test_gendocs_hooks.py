"""Generator hooks: the repository's own generator, run sandboxed, outputs compared."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.core.snapshot import DirTree, GitTree
from bot.gendocs.config import HookRule
from bot.gendocs.hooks import run_hook
from bot.local.sandbox import SandboxRunner

# Modelled on vLLM's nightly-torch generator: drop torch pins from the test inputs.
GENERATOR = """\
import os
lines = open("requirements/test/cuda.in").read().splitlines()
kept = [line for line in lines if not line.startswith("torch")]
with open("requirements/test/nightly.txt", "w") as out:
    out.write("\\n".join(kept) + "\\n")
    if os.environ.get("GITHUB_TOKEN"):
        out.write("leaked\\n")
"""
INPUT = "pytest==8.3\ntorch==2.9\nnumpy\n"
OUTPUT = "pytest==8.3\nnumpy\n"


def hook(**overrides) -> HookRule:
    values = {
        "name": "nightly",
        "command": [sys.executable, "tools/gen.py"],
        "outputs": ["requirements/test/nightly.txt"],
        "tooling": ["tools/gen.py"],
        "inputs": ["requirements/test"],
        "timeout": 60,
    }
    values.update(overrides)
    return HookRule(**values)


def tree(root: Path, generator: str = GENERATOR, output: str | None = OUTPUT) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "requirements/test").mkdir(parents=True)
    (root / "tools/gen.py").write_text(generator)
    (root / "requirements/test/cuda.in").write_text(INPUT)
    if output is not None:
        (root / "requirements/test/nightly.txt").write_text(output)
    return root


def run(tmp_path: Path, head: Path, **kwargs):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    kwargs.setdefault("runner", SandboxRunner(timeout=60))
    return run_hook(kwargs.pop("rule", hook()), DirTree(head), work_dir=work, **kwargs)


def test_output_matching_the_generator_is_in_sync(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")  # the sandbox must not pass it on
    [result] = run(tmp_path, tree(tmp_path / "head"))
    assert result.in_sync, result.problems
    assert result.generated == OUTPUT.encode() and result.patch() == ""


def test_a_stale_output_is_reported_line_by_line_with_a_patch(tmp_path):
    [result] = run(tmp_path, tree(tmp_path / "head", output="pytest==8.2\nnumpy\n"))
    assert not result.in_sync
    [cell] = result.cells
    assert (cell.table, cell.row, cell.expected, cell.actual) == (
        "requirements/test/nightly.txt",
        "line 1",
        "pytest==8.3",
        "pytest==8.2",
    )
    assert "-pytest==8.2\n+pytest==8.3" in result.patch()
    # The committed file is untouched: hooks run in a temporary copy.
    assert (tmp_path / "head/requirements/test/nightly.txt").read_text() == "pytest==8.2\nnumpy\n"


def test_a_missing_output_is_drift(tmp_path):
    [result] = run(tmp_path, tree(tmp_path / "head", output=None))
    assert not result.in_sync
    assert (result.cells[0].row, result.cells[0].kind) == ("(file)", "table")


def test_a_crashing_generator_is_a_finding_naming_the_file(tmp_path):
    head = tree(tmp_path / "head", generator="raise RuntimeError('no input today')\n")
    [result] = run(tmp_path, head)
    [problem] = result.errors
    assert problem.path == "requirements/test/nightly.txt"
    assert "exited with 1" in problem.message and "no input today" in problem.message


def test_a_generator_that_hangs_times_out(tmp_path):
    head = tree(tmp_path / "head", generator="import time\ntime.sleep(600)\n")
    [result] = run(tmp_path, head, rule=hook(timeout=0.5))
    [problem] = result.errors
    assert "timed out" in problem.message and problem.path == "requirements/test/nightly.txt"


def test_without_a_runner_nothing_runs_and_it_says_so(tmp_path):
    [result] = run(tmp_path, tree(tmp_path / "head"), runner=None)
    assert not result.in_sync and "no sandbox runner" in result.errors[0].message


def test_an_untrusted_pr_changing_the_generator_gets_the_base_generator(tmp_path, make_repo):
    repo = make_repo()
    base_root = tree(repo.path)
    base_sha = repo.commit({}, "base")
    evil = GENERATOR.replace('"\\n".join(kept)', '"pwned"')
    head_sha = repo.commit({"tools/gen.py": evil}, "change the generator")
    head, base = GitTree(base_root, head_sha), GitTree(base_root, base_sha)
    work = tmp_path / "work"
    work.mkdir()
    common = {"runner": SandboxRunner(timeout=60), "work_dir": work, "base": base}
    changed = ["tools/gen.py"]
    [untrusted] = run_hook(hook(), head, changed_paths=changed, trusted=False, **common)
    assert untrusted.generator_changed and untrusted.ran_generator_from == "base"
    assert untrusted.in_sync and "not trusted" in untrusted.notes[0]
    [trusted] = run_hook(hook(), head, changed_paths=changed, trusted=True, **common)
    assert trusted.ran_generator_from == "head" and trusted.generated.startswith(b"pwned")
    assert not trusted.in_sync
    # Trust is the head's: an author's association, or a local `prbot check`, which has no
    # author to judge ("the author is trusted" was untrue there).
    assert trusted.notes == [
        "the PR changes this generator; ran the PR's generator (the head is trusted)"
    ]


def test_a_generator_command_that_does_not_exist_is_a_finding(tmp_path):
    rule = hook(command=["prbot-no-such-generator"])
    [result] = run(tmp_path, tree(tmp_path / "head"), rule=rule)
    [problem] = result.errors
    assert problem.path == "requirements/test/nightly.txt"
    assert "could not start 'prbot-no-such-generator'" in problem.message


def test_a_symlink_in_the_pr_pointing_outside_is_a_finding_not_a_crash(tmp_path, make_repo):
    repo = make_repo()
    tree(repo.path)
    repo.commit({}, "base")
    (repo.path / "requirements/test/cuda.in").unlink()
    (repo.path / "requirements/test/cuda.in").symlink_to("/etc/hostname")
    head_sha = repo.commit({}, "point the input outside the tree")
    work = tmp_path / "work"
    work.mkdir()
    runner = SandboxRunner(timeout=60)
    [result] = run_hook(hook(), GitTree(repo.path, head_sha), runner=runner, work_dir=work)
    [problem] = result.errors
    assert problem.path == "requirements/test/nightly.txt"
    assert "could not copy the tree" in problem.message and runner.invocations == 0


def test_an_output_the_generator_made_a_symlink_is_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("private key\n")
    generator = (
        "import os\n"
        "os.remove('requirements/test/nightly.txt')\n"
        f"os.symlink({str(secret)!r}, 'requirements/test/nightly.txt')\n"
    )
    [result] = run(tmp_path, tree(tmp_path / "head", generator=generator))
    assert result.generated is None and "private key" not in result.patch()
    [problem] = result.errors
    assert "output is a symbolic link, not read" in problem.message


def test_hook_paths_must_stay_inside_the_repository():
    # Outputs are read back from the sandbox copy and written by `prbot docs --write`.
    for outside in ("../../etc/cron.d/job", "/etc/passwd", "docs/../../x"):
        with pytest.raises(ValidationError, match="not a path inside the repository"):
            hook(outputs=[outside])
    with pytest.raises(ValidationError):
        hook(tooling=["../tools/gen.py"])
    assert hook(outputs=["docker/versions.json"]).outputs == ["docker/versions.json"]
