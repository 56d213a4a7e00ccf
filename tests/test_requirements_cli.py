"""``prbot check`` shows the requirements section, on a git fixture shaped like vLLM's."""

import json

from requirements_helpers import LAYOUT, WHEELS, rule_text

from bot.cli import main
from bot.requirements.localwheels import write_index

CONTRACT_FIELDS = {"platform", "arch", "added", "removed", "changed", "resolution", "detail"}


def check_argv(repo, base, head, rules_path):
    # --no-cache: each run resolves afresh (reuse across runs is tested in test_cli_check).
    return ["check", "--repo", str(repo.path), "--base", base, "--head", head] + [
        "--rules",
        str(rules_path),
        "--no-cache",
    ]


def test_prbot_check_prints_the_requirements_section(make_repo, tmp_path, capsys):
    repo = make_repo("vllm")
    base = repo.commit(LAYOUT, "base")
    common = LAYOUT["requirements/common.txt"] + "alpha<3\n"
    head = repo.commit({"requirements/common.txt": common})
    rules_path = tmp_path / "rules.yaml"
    rules_path.write_text(rule_text(write_index(tmp_path / "wheels", WHEELS)))
    argv = check_argv(repo, base, head, rules_path)

    assert main([*argv, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (section,) = [s for s in report["sections"] if s["check"] == "requirements"]
    by_cell = {(f["platform"], f["arch"]): f for f in section["findings"]}
    assert by_cell[("cpu", "x86_64")]["resolution"] == "ok"
    assert by_cell[("cpu", "x86_64")]["changed"][0]["to"] == "alpha<3,>=1.0"
    assert all(set(finding) >= CONTRACT_FIELDS for finding in section["findings"])

    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "**Requirements per architecture**" in text
    # cpu/x86_64 and cpu/aarch64 say the same: one row.
    assert "| `cpu` | x86\\_64, aarch64 | 0 | 0 | 1 | ✅ ok |" in text


def test_prbot_check_with_a_bad_rules_file_is_one_line(make_repo, tmp_path, capsys):
    repo = make_repo("vllm")
    base = repo.commit(LAYOUT, "base")
    rules_path = tmp_path / "rules.yaml"
    rules_path.write_text("version: 1\nchecks:\n  requirements:\n    platforms: {cuda: {}}\n")
    assert main(check_argv(repo, base, base, rules_path)) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1
    assert "rules.yaml:4: checks.requirements.platforms.cuda.entries" in errors[0]
