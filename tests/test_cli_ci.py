"""`prbot ci classify`: the classifier on saved Buildkite API answers, as JSON and Markdown;
bad files are one line and exit 2."""

from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.testing.buildkite_shapes import build, history, step_jobs, waiter


@pytest.fixture
def saved(tmp_path):
    builds = history({"kernels": "P" * 10, "flips": "PFPPFPPPP", "broken": "FFPPP"})
    builds += history({"kernels": "F" * 5}, newest=2000, branch="release")  # ignored
    jobs = [waiter(), *step_jobs(5000, "kernels", "X"), *step_jobs(5000, "flips", "F")]
    jobs += [*step_jobs(5000, "broken", "F"), *step_jobs(5000, "added", "F")]
    jobs += step_jobs(5000, "lucky", "R") + step_jobs(5000, "fine", "P")
    head = build(5000, jobs, branch="feature")
    head["pull_request"] = {"id": "12", "base": "main", "repository": "https://x/y.git"}
    (tmp_path / "head.json").write_text(json.dumps(head))
    (tmp_path / "builds.json").write_text(json.dumps(builds))
    return tmp_path


def classify(path, *extra: str) -> list[str]:
    return [
        "ci",
        "classify",
        "--head-build",
        str(path / "head.json"),
        "--history",
        str(path / "builds.json"),
        *extra,
    ]


def test_json_is_the_contract_list_new_first(saved, capsys):
    assert main(classify(saved, "--format", "json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["classification"]) for r in out] == [
        ("kernels", "new"),
        ("added", "unknown"),
        ("broken", "broken_trunk"),
        ("flips", "flaky"),
        ("lucky", "flaky"),
    ]
    for row in out:
        assert {"step_key", "name", "state", "classification", "evidence", "base_builds_seen"} <= (
            set(row)
        )
    assert out[0]["base_builds_seen"] == 10  # the release branch's builds are not main's
    assert out[2]["evidence"][0]["job_url"].startswith("https://buildkite.com/acme/ci/builds/1000#")


def test_markdown_groups_by_classification_with_links(saved, capsys):
    assert main(classify(saved)) == 0
    out = capsys.readouterr().out
    assert out.index("### New failures (1)") < out.index("### Unknown (1)")
    assert out.index("### Broken trunk (1)") < out.index("### Flaky (2)")
    assert "[same step on main](https://buildkite.com/acme/ci/builds/1000#" in out
    assert "5 build(s) of other branches ignored" in out


def test_the_merge_base_decides_broken_trunk(saved, capsys):
    merge_base = f"{998:040x}"  # main's 998 passed "broken"; it broke after
    assert main(classify(saved, "--format", "json", "--merge-base", merge_base)) == 0
    by_name = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_name["broken"]["classification"] == "broken_trunk"
    assert "after the merge base" in by_name["broken"]["reason"]


def test_a_head_build_without_jobs_is_one_unknown(saved, capsys):
    head = json.loads((saved / "head.json").read_text())
    del head["jobs"]
    (saved / "head.json").write_text(json.dumps(head))
    assert main(classify(saved, "--format", "json")) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["classification"] == "unknown" and "no jobs" in row["reason"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("head.json", "{not json", "the head build is not JSON"),
        ("head.json", "[]", "the head build is not one build object"),
        ("builds.json", '{"a": 1}', "the history is not a list of builds"),
        ("builds.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_a_bad_file_is_one_line_and_exit_2(saved, capsys, name, content, message):
    (saved / name).write_text(content)
    assert main(classify(saved)) == 2
    captured = capsys.readouterr()
    [line] = captured.err.strip().splitlines()
    assert message in line and captured.out == ""


def test_a_missing_file_and_a_bad_bound_are_one_line(saved, capsys):
    (saved / "builds.json").unlink()
    assert main(classify(saved)) == 2
    assert "cannot read the history" in capsys.readouterr().err
    assert main([*classify(saved), "--max-builds", "0"]) == 2
    assert "--max-builds" in capsys.readouterr().err


def test_rules_set_the_thresholds_as_the_server_reads_them(saved, capsys):
    """`flips` fails alone between passes twice on main: flaky under the default
    flaky_failures (2); a rules file asking for 3 makes it new (main passed it since)."""
    (saved / "prbot.yml").write_text(
        "extends: vllm\nchecks:\n  jobs:\n    ci_signal:\n      flaky_failures: 3\n"
    )
    assert main(classify(saved, "--format", "json", "--rules", str(saved / "prbot.yml"))) == 0
    by_name = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_name["flips"]["classification"] == "new"
    assert by_name["lucky"]["classification"] == "flaky"  # its own retry passed
    # history_builds from the rules bounds what is read; --max-builds overrides it.
    (saved / "few.yml").write_text("checks:\n  jobs:\n    ci_signal:\n      history_builds: 2\n")
    assert main(classify(saved, "--format", "json", "--rules", str(saved / "few.yml"))) == 0
    by_name = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_name["kernels"]["base_builds_seen"] == 2
    few = ("--rules", str(saved / "few.yml"), "--max-builds", "4")
    assert main(classify(saved, "--format", "json", *few)) == 0
    assert json.loads(capsys.readouterr().out)[0]["base_builds_seen"] == 4


def test_a_bad_rules_file_is_one_line_and_exit_2(saved, capsys):
    (saved / "bad.yml").write_text("checks:\n  jobs:\n    ci_signal:\n      flaky_window: 1\n")
    assert main(classify(saved, "--rules", str(saved / "bad.yml"))) == 2
    captured = capsys.readouterr()
    [line] = captured.err.strip().splitlines()
    assert "flaky_window" in line and captured.out == ""
    assert main(classify(saved, "--rules", str(saved / "missing.yml"))) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "missing.yml" in line and "cannot read" in line


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfe\x00\x01" * 100, "not UTF-8"),
        # Read to the bound, not whole: a rules path could as well be /dev/zero.
        (b"# " + b"x" * 1_100_000 + b"\n", "characters; not read"),
    ],
)
def test_a_binary_or_huge_rules_file_is_one_line_and_exit_2(saved, capsys, content, message):
    (saved / "hostile.yml").write_bytes(content)
    assert main(classify(saved, "--rules", str(saved / "hostile.yml"))) == 2
    captured = capsys.readouterr()
    [line] = captured.err.strip().splitlines()
    assert message in line and "hostile.yml" in line and captured.out == ""
