from bot.requirements.consistency import pin_conflicts
from bot.requirements.effective import marker_environment
from bot.requirements.graph import parse_any

X86 = marker_environment("x86_64", "3.12")


def lines(files: dict[str, str]):
    out = []
    for path, text in files.items():
        out += parse_any(path, text).requirements
    return out


def test_torch_pinned_differently_across_files_of_one_platform():
    found = pin_conflicts(
        lines(
            {
                "requirements/cuda.txt": "torch==2.12.0\n",
                "requirements/build/cuda.txt": "cmake\ntorch==2.11.0\n",
                "pyproject.toml": '[build-system]\nrequires = ["torch == 2.11.0"]\n',
                "requirements/test/cuda.in": "torch==2.11.0\n",
            }
        ),
        X86,
    )
    (conflict,) = found
    assert conflict.name == "torch"
    assert conflict.reason == "pinned to 2.12.0 and 2.11.0"
    assert {(f, n) for f, n, _ in conflict.lines} == {
        ("requirements/cuda.txt", 1),
        ("requirements/build/cuda.txt", 2),
        ("pyproject.toml", 2),
        ("requirements/test/cuda.in", 1),
    }


def test_pin_outside_another_files_range():
    (conflict,) = pin_conflicts(
        lines({"a.txt": "setuptools==82.0\n", "b.txt": "setuptools>=77.0.3,<81.0.0\n"}), X86
    )
    assert "excludes" in conflict.reason


def test_agreeing_pins_ranges_and_other_architectures_are_fine():
    files = {
        "cpu.txt": 'torch==2.11.0+cpu; platform_machine == "x86_64"\n'
        'torch==2.11.0; platform_machine == "ppc64le"\nsetuptools==77.0.3\n',
        "build/cpu.txt": 'torch==2.11.0+cpu; platform_machine == "x86_64"\n'
        'torch==2.11.0; platform_machine == "ppc64le"\nsetuptools>=77\n',
    }
    assert pin_conflicts(lines(files), X86) == []
    assert pin_conflicts(lines(files), marker_environment("ppc64le", "3.12")) == []


def test_same_file_twice_is_not_a_conflict_and_key_ignores_line_numbers():
    assert pin_conflicts(lines({"a.txt": "x==1\nx==2\n"}), X86) == []
    one = pin_conflicts(lines({"a.txt": "x==1\n", "b.txt": "x==2\n"}), X86)[0]
    moved = pin_conflicts(lines({"a.txt": "\n\nx==1\n", "b.txt": "x==2\n"}), X86)[0]
    assert one.key() == moved.key()
