from bot.requirements.parser import (
    logical_lines,
    name_from_url,
    parse_pyproject_build_requires,
    parse_requirement_file,
)


def test_logical_lines_join_continuations_and_drop_comments():
    text = "# header\nnumpy \\\n  >=1.0 # why\n\nfoo @ https://x/y.whl#sha256=abc\n"
    assert logical_lines(text) == [(2, "numpy   >=1.0"), (5, "foo @ https://x/y.whl#sha256=abc")]


def test_comment_line_ends_a_continuation_like_pip():
    assert logical_lines("a \\\n# c\nb\n") == [(1, "a"), (3, "b")]


def test_requirements_with_markers_extras_hashes_and_urls():
    text = "\n".join(
        [
            "fastapi[standard] >= 0.115.0 # comment",
            'torch==2.11.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"',
            "six>=1.16.0; python_version > '3.11'",
            "pkg==1.0 --hash=sha256:aaa --hash sha256:bbb",
            "kernels @ https://example.com/kernels-0.1.7-cp38-abi3-manylinux_2_28_x86_64.whl",
            "git+https://github.com/org/fastsafetensors.git@0.2.2#egg=fastsafetensors",
            "https://example.com/dl/other_pkg-2.0-py3-none-any.whl",
        ]
    )
    parsed = parse_requirement_file("req.txt", text)
    assert parsed.problems == []
    by_name = {r.name: r for r in parsed.requirements}
    assert set(by_name) == {
        *("fastapi", "torch", "six", "pkg"),
        *("kernels", "fastsafetensors", "other-pkg"),
    }
    assert by_name["fastapi"].requirement.extras == {"standard"}
    assert str(by_name["torch"].requirement.specifier) == "==2.11.0+cpu"
    assert by_name["torch"].line == 2
    assert by_name["pkg"].hashes == ("sha256:aaa", "sha256:bbb")
    assert by_name["kernels"].url.startswith("https://example.com/")
    assert by_name["fastsafetensors"].url.startswith("git+https://")
    assert not by_name["fastsafetensors"].is_local


def test_includes_are_relative_to_the_including_file():
    text = "-r ../common.txt\n--requirement=extra.txt\n-c../constraints.txt\n--constraint x.txt\n"
    parsed = parse_requirement_file("requirements/build/rocm.txt", text)
    assert [(i.kind, i.target, i.line) for i in parsed.includes] == [
        ("requirement", "requirements/common.txt", 1),
        ("requirement", "requirements/build/extra.txt", 2),
        ("constraint", "requirements/constraints.txt", 3),
        ("constraint", "requirements/build/x.txt", 4),
    ]


def test_index_options_and_editables():
    text = (
        "--extra-index-url https://download.pytorch.org/whl/cpu\n"
        "--extra-index-url=https://download.pytorch.org/whl/xpu\n"
        "-i https://pypi.org/simple\n--find-links ./wheels\n--no-index\n--pre\n"
        "-e .\n-e git+https://github.com/org/repo.git#egg=repo\n"
    )
    parsed = parse_requirement_file("r.txt", text)
    assert parsed.problems == []
    assert [(o.option, o.value) for o in parsed.options] == [
        ("extra-index-url", "https://download.pytorch.org/whl/cpu"),
        ("extra-index-url", "https://download.pytorch.org/whl/xpu"),
        ("index-url", "https://pypi.org/simple"),
        ("find-links", "./wheels"),
        ("no-index", None),
        ("pre", None),
    ]
    local, remote = parsed.requirements
    assert local.editable and local.is_local
    assert remote.editable and remote.name == "repo" and not remote.is_local


def test_bad_lines_become_problems_with_file_and_line_and_the_rest_still_parses():
    text = "\n".join(
        [
            "good==1.0",
            "bad spec ===",
            'foo; platform_machine = "x86_64"',
            "--frobnicate yes",
            "-r",
            "-r /etc/passwd",
            "--hash=sha256:abc",
            "also-good",
            "x==1 -r other.txt",
        ]
    )
    parsed = parse_requirement_file("r.txt", text)
    assert [r.name for r in parsed.requirements] == ["good", "also-good"]
    messages = {p.line: p.message for p in parsed.problems}
    assert messages[2].startswith("invalid requirement")
    assert messages[3].startswith("invalid marker")
    assert messages[4] == "unknown option '--frobnicate'"
    assert messages[5] == "option '-r' needs a value"
    assert "outside the repository" in messages[6]
    assert "without a requirement" in messages[7]
    assert "cannot follow a requirement" in messages[9]


def test_name_from_url():
    assert name_from_url("https://x/vllm_xpu_kernels-0.1.7-cp38-abi3-linux_x86_64.whl") == (
        "vllm-xpu-kernels"
    )
    assert name_from_url("https://x/Foo_Bar-1.0.tar.gz") == "foo-bar"
    assert name_from_url("https://x/unknown") is None


def test_pyproject_build_requires_with_line_numbers():
    text = (
        '[project]\nname = "x"\n\n[build-system]\n'
        'requires = [\n  "cmake>=3.26",\n  "torch == 2.11.0",\n]\n'
    )
    parsed = parse_pyproject_build_requires("pyproject.toml", text)
    assert [(r.name, r.line) for r in parsed.requirements] == [("cmake", 6), ("torch", 7)]


def test_pyproject_invalid_toml_is_a_problem():
    parsed = parse_pyproject_build_requires("pyproject.toml", "[build-system\n")
    assert parsed.requirements == []
    assert parsed.problems[0].message.startswith("invalid TOML")
    assert parsed.problems[0].line == 1
