from pathlib import Path

from bot.core.snapshot import DirTree
from bot.requirements.effective import (
    change_source,
    change_texts,
    diff_sets,
    effective_set,
    marker_environment,
)
from bot.requirements.graph import RequirementTree

CPU = (
    "-r common.txt\n"
    'torch==2.11.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"\n'
    'torch==2.11.0; platform_machine == "ppc64le"\n'
    'intel-openmp==2024.2.1; platform_machine == "x86_64"\n'
    'numba==0.65.0; platform_machine != "s390x"\n'
)


def closure_of(root: Path, files: dict[str, str], entry: str, constraints=()):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return RequirementTree(DirTree(root)).closure([entry], constraints)


def test_marker_environment_for_linux_arch():
    env = marker_environment("aarch64", "3.12")
    assert env["platform_machine"] == "aarch64"
    assert env["python_full_version"] == "3.12.0"
    assert env["sys_platform"] == "linux"


def test_markers_split_the_architectures(tmp_path):
    closure = closure_of(tmp_path, {"common.txt": "numpy\n", "cpu.txt": CPU}, "cpu.txt")
    x86 = effective_set(closure, marker_environment("x86_64", "3.12"))
    ppc = effective_set(closure, marker_environment("ppc64le", "3.12"))
    s390 = effective_set(closure, marker_environment("s390x", "3.12"))
    assert x86["torch"].specifier == "==2.11.0+cpu"
    assert ppc["torch"].specifier == "==2.11.0"
    assert "intel-openmp" in x86 and "intel-openmp" not in ppc
    assert "numba" not in s390 and "torch" not in s390
    assert [str(s) for s in x86["numpy"].sources] == ["common.txt:1"]


def test_python_version_markers(tmp_path):
    closure = closure_of(tmp_path, {"r.txt": "six>=1.16; python_version > '3.11'\n"}, "r.txt")
    assert "six" in effective_set(closure, marker_environment("x86_64", "3.12"))
    assert "six" not in effective_set(closure, marker_environment("x86_64", "3.11"))


def test_constraints_narrow_required_packages_only(tmp_path):
    closure = closure_of(
        tmp_path,
        {"test.in": "torch\npytest\n", "cuda.txt": "torch==2.11.0\nflashinfer==0.6\n"},
        "test.in",
        constraints=["cuda.txt"],
    )
    result = effective_set(closure, marker_environment("x86_64", "3.12"))
    assert set(result) == {"torch", "pytest"}
    assert result["torch"].specifier == "==2.11.0"
    assert [str(s) for s in result["torch"].sources] == ["test.in:1", "cuda.txt:1"]


def test_diff_added_removed_changed_with_marker_only_changes(tmp_path):
    env = marker_environment("x86_64", "3.12")
    base = effective_set(
        closure_of(
            tmp_path / "b",
            {"r.txt": 'numpy\ntorch==2.10\nold\nta; platform_machine != "s390x"\n'},
            "r.txt",
        ),
        env,
    )
    head = effective_set(
        closure_of(
            tmp_path / "h",
            {
                "r.txt": "numpy\ntorch==2.11\nnew>=1\n"
                'ta; platform_machine != "s390x" and platform_machine != "riscv64"\n'
            },
            "r.txt",
        ),
        env,
    )
    diff = diff_sets(base, head)
    assert [e.display() for e in diff.added] == ["new>=1"]
    assert [e.display() for e in diff.removed] == ["old"]
    changes = {after.name: change_texts(before, after) for before, after in diff.changed}
    assert changes["torch"] == ("torch==2.10", "torch==2.11")
    assert changes["ta"][0] == 'ta; platform_machine != "s390x"'
    assert "riscv64" in changes["ta"][1]
    assert "numpy" not in changes


def test_change_source_is_the_edited_line_not_the_first_one(tmp_path):
    env = marker_environment("x86_64", "3.12")
    files = {"t.in": "pytest\ntorch\n", "c.txt": "# pins\ntorch==2.11\n"}
    base = effective_set(closure_of(tmp_path / "b", files, "t.in", ["c.txt"]), env)
    bumped = {**files, "c.txt": "# pins\ntorch==2.12\n"}
    head = effective_set(closure_of(tmp_path / "h", bumped, "t.in", ["c.txt"]), env)
    source, side = change_source(base["torch"], head["torch"])
    assert (str(source), side) == ("c.txt:2", "head")
    # A constraint line the PR removed: the change is at base.
    unpinned = {**files, "c.txt": "# pins\n"}
    head = effective_set(closure_of(tmp_path / "u", unpinned, "t.in", ["c.txt"]), env)
    source, side = change_source(base["torch"], head["torch"])
    assert (str(source), side) == ("c.txt:2", "base")


def test_a_range_merged_into_a_url_requirement_is_shown(tmp_path):
    env = marker_environment("x86_64", "3.12")
    url = "fast @ git+https://example.invalid/fast.git@0.2.2"
    base = effective_set(closure_of(tmp_path / "b", {"r.txt": url + "\n"}, "r.txt"), env)
    ranged = {"r.txt": url + "\n-r c.txt\n", "c.txt": "fast>=0.2.2\n"}
    head = effective_set(closure_of(tmp_path / "h", ranged, "r.txt"), env)
    (before, after), *_ = diff_sets(base, head).changed
    assert change_texts(before, after) == (
        "fast @ git+https://example.invalid/fast.git@0.2.2",
        "fast @ git+https://example.invalid/fast.git@0.2.2 (>=0.2.2)",
    )


def test_the_same_versions_written_another_way_are_no_change(tmp_path):
    # vLLM 0.23.0 -> 0.26.0: test/cuda.in dropped `pydantic>=2.12`, leaving common.txt's
    # `pydantic >= 2.12.0`; the environment allows the same versions, so nothing changed.
    env = marker_environment("x86_64", "3.12")
    common = "pydantic >= 2.12.0\n"
    base = {"common.txt": common, "test.in": "-r common.txt\npydantic>=2.12\n"}
    head = {"common.txt": common, "test.in": "-r common.txt\n"}
    before = effective_set(closure_of(tmp_path / "b", base, "test.in"), env)
    after = effective_set(closure_of(tmp_path / "h", head, "test.in"), env)
    assert before["pydantic"].specifier != after["pydantic"].specifier  # written differently
    assert not diff_sets(before, after)
    # A bound that does move is still a change.
    raised = {"common.txt": "pydantic >= 2.13\n", "test.in": "-r common.txt\n"}
    after = effective_set(closure_of(tmp_path / "r", raised, "test.in"), env)
    assert [a.display() for _, a in diff_sets(before, after).changed] == ["pydantic>=2.13"]
