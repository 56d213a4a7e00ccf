"""``prbot check`` as a newcomer runs it: no flags to guess, errors that name what is wrong."""

from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.requirements.localwheels import write_index

VLLM_SHAPED = {
    "setup.py": "from setuptools import setup\nsetup()\n",
    "requirements/cuda.txt": "-r common.txt\n",
    "requirements/common.txt": "alpha>=1.0\n",
    "vllm/__init__.py": "",
    "vllm/v1/attention/backends/registry.py": "import enum\n\n"
    'class AttentionBackendEnum(enum.Enum):\n    FLASH_ATTN = "x"\n',
    "README.md": "# a model server\n",
}


@pytest.fixture(autouse=True)
def _no_default_rules_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRBOT_DEFAULT_RULES", raising=False)


def _error_line(err: str) -> str:
    """The one error line (progress lines may come before it)."""
    (line,) = [line for line in err.splitlines() if line.startswith("prbot: error:")]
    return line


def _sections(out: str) -> dict[str, dict]:
    return {section["check"]: section for section in json.loads(out)["sections"]}


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("prbot ") and out.split()[1][0].isdigit(), out


def test_check_on_a_vllm_shaped_tree_uses_the_vllm_rules_by_itself(
    make_repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo("vllm")
    base = repo.commit(VLLM_SHAPED, "base")
    head = repo.commit({"README.md": "# a faster model server\n"}, "head")
    argv = ["check", "--repo", str(repo.path), "--base", base, "--head", head, "--no-cache"]

    assert main([*argv, "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "using the built-in 'vllm' rules" in captured.err
    detected = _sections(captured.out)["requirements"]

    assert main([*argv, "--format", "json", "--default-rules", "default"]) == 0
    captured = capsys.readouterr()
    assert "built-in 'vllm'" not in captured.err
    # The default set declares no platforms, so the section says so; vLLM's has a matrix.
    assert _sections(captured.out)["requirements"]["summary"] != detected["summary"]


def test_check_honours_prbot_default_rules(
    make_repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo("vllm")
    base = repo.commit(VLLM_SHAPED, "base")
    monkeypatch.setenv("PRBOT_DEFAULT_RULES", "default")
    argv = ["check", "--repo", str(repo.path), "--base", base, "--head", base, "--no-cache"]
    assert main(argv) == 0
    assert "built-in 'vllm'" not in capsys.readouterr().err

    monkeypatch.setenv("PRBOT_DEFAULT_RULES", "nope")
    assert main(argv) == 2
    line = _error_line(capsys.readouterr().err)
    assert "PRBOT_DEFAULT_RULES: no built-in rule set 'nope' (built in: default, vllm)" in line


def test_an_unknown_default_rule_set_names_the_option_not_the_repo_file(
    git_repo, capsys: pytest.CaptureFixture[str]
) -> None:
    base = git_repo.commit({"a.py": "x = 1\n"})
    argv = ["check", "--repo", str(git_repo.path), "--base", base, "--head", base]
    assert main([*argv, "--default-rules", "foo"]) == 2
    line = _error_line(capsys.readouterr().err)
    assert line == (
        "prbot: error: --default-rules: no built-in rule set 'foo' (built in: default, vllm)"
    )
    assert "prbot.yml" not in line


@pytest.mark.parametrize("option", ["--base", "--head"])
def test_an_unknown_revision_is_named(
    git_repo, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = git_repo.commit({"a.py": "x = 1\n"})
    revisions = {"--base": sha, "--head": sha, option: "nope"}
    argv = ["check", "--repo", str(git_repo.path)]
    for name, value in revisions.items():
        argv += [name, value]
    assert main(argv) == 2
    line = _error_line(capsys.readouterr().err)
    assert line == f"prbot: error: {option}: no commit 'nope' in {git_repo.path}"


def test_a_subdirectory_of_a_checkout_works(git_repo, capsys: pytest.CaptureFixture[str]) -> None:
    base = git_repo.commit({"pkg/a.py": "x = 1\n"})
    head = git_repo.commit({"pkg/a.py": "x = 2\n"})
    argv = ["check", "--repo", str(git_repo.path / "pkg"), "--base", base, "--head", head]
    assert main([*argv, "--format", "json", "--no-cache"]) == 0
    changed = _sections(capsys.readouterr().out)["changed_files"]
    assert [f["files"] for f in changed["findings"]] == [["pkg/a.py"]]


def test_a_directory_outside_any_checkout_is_one_line(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["check", "--repo", str(plain), "--base", "a", "--head", "b"]) == 2
    line = _error_line(capsys.readouterr().err)
    assert line == f"prbot: error: --repo: {plain} is not inside a git checkout"


def test_fail_on_sets_the_exit_code_from_the_worst_section(
    git_repo, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = git_repo.commit({"src/a.py": "x = 1\n"})
    head = git_repo.commit({"docs/guide.md": "# guide\n"})
    rules_path = tmp_path / "rules.yaml"
    rules_path.write_text(
        "version: 1\nchecks:\n  changed_files:\n"
        '    areas: {docs: ["docs/**"]}\n    warn_on: [docs]\n'
    )
    argv = ["check", "--repo", str(git_repo.path), "--base", base, "--head", head]
    argv += ["--rules", str(rules_path), "--format", "json", "--no-cache"]

    assert main(argv) == 0  # a report was produced
    assert _sections(capsys.readouterr().out)["changed_files"]["status"] == "warn"
    assert main([*argv, "--fail-on", "fail"]) == 0
    capsys.readouterr()
    assert main([*argv, "--fail-on", "warn"]) == 1
    assert "--fail-on warn: changed_files is warn" in capsys.readouterr().err


def test_uv_resolutions_are_reused_between_runs(
    make_repo, tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PRBOT_DATA_DIR", str(tmp_path / "data"))
    wheels = write_index(tmp_path / "wheels", {"alpha": {"1.0": [], "2.0": []}})
    rules_path = tmp_path / "rules.yaml"
    rules_path.write_text(
        "version: 1\nchecks:\n  requirements:\n"
        f'    uv_options: [--no-index, --find-links, "{wheels}"]\n'
        "    platforms:\n      cpu: {entries: [requirements/cpu.txt], archs: [x86_64]}\n"
    )
    repo = make_repo("app")
    base = repo.commit({"requirements/cpu.txt": "alpha>=1.0\n"})
    head = repo.commit({"requirements/cpu.txt": "alpha>=2.0\n"})
    argv = ["check", "--repo", str(repo.path), "--base", base, "--head", head]
    argv += ["--rules", str(rules_path), "--format", "json"]

    def cells() -> list[dict]:
        assert main(argv) == 0
        return _sections(capsys.readouterr().out)["requirements"]["findings"]

    first = cells()
    assert [cell["resolution"] for cell in first] == ["ok"]
    assert not first[0]["cached"]
    assert (tmp_path / "data" / "check-cache.sqlite").is_file()
    (second,) = cells()
    assert second["resolution"] == "ok" and second["cached"]
