from pathlib import Path

from bot.core.snapshot import DirTree
from bot.requirements.graph import RequirementTree, reverse_index

# docs/checks/requirements.md: "a requirement file over 1 MB is a problem naming it; the include
# walk is iterative, at most 50 deep and 2,000 files per closure". The documented figures,
# not the code's constants, so a changed bound fails here.
MAX_REQUIREMENTS_BYTES = 1_000_000
MAX_INCLUDE_DEPTH = 50
MAX_CLOSURE_FILES = 2_000


def write(root: Path, files: dict[str, str]) -> DirTree:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return DirTree(root)


def test_closure_follows_r_and_c_and_constraints_stay_constraints(tmp_path):
    tree = RequirementTree(
        write(
            tmp_path,
            {
                "requirements/common.txt": "numpy\nrequests>=2\n",
                "requirements/cuda.txt": "-r common.txt\ntorch==2.11.0\n",
                "requirements/test/cuda.in": "pytest\n-c ../cuda.txt\n",
            },
        )
    )
    closure = tree.closure(["requirements/test/cuda.in"])
    assert [r.name for r in closure.requirements] == ["pytest"]
    # Like uv: what a -c file includes with -r is a constraint too.
    assert [r.name for r in closure.constraints] == ["torch", "numpy", "requests"]
    assert closure.files == [
        "requirements/test/cuda.in",
        "requirements/cuda.txt",
        "requirements/common.txt",
    ]
    assert closure.problems == []


def test_missing_include_and_cycle_are_problems_at_the_include_line(tmp_path):
    tree = RequirementTree(
        write(
            tmp_path,
            {
                "r/a.txt": "x\n-r b.txt\n",
                "r/b.txt": "y\n\n-r a.txt\n-r gone.txt\n",
            },
        )
    )
    closure = tree.closure(["r/a.txt"])
    assert [r.name for r in closure.requirements] == ["x", "y"]
    assert [(p.location(), p.message) for p in closure.problems] == [
        ("r/b.txt:3", "circular include: r/a.txt → r/b.txt → r/a.txt"),
        ("r/b.txt:4", "-r r/gone.txt: file not found"),
    ]


def test_missing_entry_is_a_problem(tmp_path):
    closure = RequirementTree(write(tmp_path, {})).closure(["requirements/nope.txt"])
    assert [(p.file, p.line, p.message) for p in closure.problems] == [
        ("requirements/nope.txt", 0, "entry file not found")
    ]


def test_diamond_includes_are_read_once(tmp_path):
    tree = RequirementTree(
        write(
            tmp_path,
            {
                "a.txt": "-r b.txt\n-r c.txt\n",
                "b.txt": "-r d.txt\n",
                "c.txt": "-r d.txt\n",
                "d.txt": "z\n",
            },
        )
    )
    closure = tree.closure(["a.txt"])
    assert [r.name for r in closure.requirements] == ["z"]
    assert closure.problems == []


def test_reverse_index_names_every_target_a_file_reaches(tmp_path):
    tree = RequirementTree(
        write(
            tmp_path,
            {
                "common.txt": "numpy\n",
                "cuda.txt": "-r common.txt\n",
                "rocm.txt": "-r common.txt\nrocm-only\n",
            },
        )
    )
    closures = {"cuda": tree.closure(["cuda.txt"]), "rocm": tree.closure(["rocm.txt"])}
    reverse = reverse_index(closures)
    assert reverse["common.txt"] == {"cuda", "rocm"}
    assert reverse["rocm.txt"] == {"rocm"}


def test_a_3000_deep_include_chain_is_a_finding_not_a_recursion_error(tmp_path):
    files = {f"r{i}.txt": f"-r r{i + 1}.txt\npkg{i}\n" for i in range(3000)}
    files["r3000.txt"] = "last\n"
    closure = RequirementTree(write(tmp_path, files)).closure(["r0.txt"])
    assert len(closure.files) == MAX_INCLUDE_DEPTH
    (problem,) = closure.problems
    assert problem.file == f"r{MAX_INCLUDE_DEPTH - 1}.txt" and problem.line == 1
    assert f"nested over {MAX_INCLUDE_DEPTH} deep; not followed" in problem.message
    assert [r.name for r in closure.requirements][:3] == ["pkg0", "pkg1", "pkg2"]


def test_a_wide_fan_out_is_bounded(tmp_path):
    files = {"top.txt": "".join(f"-r f{i}.txt\n" for i in range(MAX_CLOSURE_FILES + 5))}
    files |= {f"f{i}.txt": f"p{i}\n" for i in range(MAX_CLOSURE_FILES + 5)}
    closure = RequirementTree(write(tmp_path, files)).closure(["top.txt"])
    assert len(closure.files) == MAX_CLOSURE_FILES
    assert any("files; not read" in p.message for p in closure.problems)


def test_an_oversized_requirement_file_is_named_in_a_problem(tmp_path):
    big = "alpha\n" + "# padding\n" * (MAX_REQUIREMENTS_BYTES // 10 + 1)
    tree = RequirementTree(write(tmp_path, {"top.txt": "-r big.txt\nbeta\n", "big.txt": big}))
    closure = tree.closure(["top.txt"])
    assert [r.name for r in closure.requirements] == ["beta"]
    (problem,) = closure.problems
    assert problem.file == "big.txt"
    assert "`big.txt` is 1.0 MB, over the 1.0 MB limit for requirement files" in problem.message
