from pathlib import Path

from bot.core.snapshot import DirTree
from bot.requirements.effective import marker_environment
from bot.requirements.graph import RequirementTree
from bot.requirements.resolve_cells import flatten


def closure(tmp_path: Path, files: dict[str, str], entry: str, constraints=()):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return RequirementTree(DirTree(tmp_path)).closure([entry], constraints)


def test_flatten_keeps_matching_lines_index_options_and_constraints(tmp_path):
    found = closure(
        tmp_path,
        {
            "common.txt": "alpha>=1\n",
            "cpu.txt": "--extra-index-url https://download.example/whl/cpu\n"
            "--find-links ./local-wheels\n-r common.txt\n-e .\n"
            'torch==2.0+cpu; platform_machine == "x86_64"\n'
            'torch==2.0; platform_machine == "ppc64le"\nalpha>=1\n',
            "pins.txt": "alpha==1.5\n",
        },
        "cpu.txt",
        ["pins.txt"],
    )
    flat = flatten(found, marker_environment("x86_64", "3.12"))
    assert flat.requirements.splitlines() == [
        "--extra-index-url https://download.example/whl/cpu",
        'torch==2.0+cpu; platform_machine == "x86_64"',
        "alpha>=1",  # once, though two files ask for it
    ]
    assert flat.constraints == "alpha==1.5\n"
    assert flat.local == ["--find-links ./local-wheels", "."]
    assert flat.ignored == []
    ppc = flatten(found, marker_environment("ppc64le", "3.12"))
    assert 'torch==2.0; platform_machine == "ppc64le"' in ppc.requirements.splitlines()


def test_a_second_option_on_a_checked_line_does_not_ride_along(tmp_path):
    found = closure(
        tmp_path,
        {
            "r.txt": "--extra-index-url https://pypi.org/simple"
            " --extra-index-url http://127.0.0.1:8000/extra\nalpha\n"
        },
        "r.txt",
    )
    flat = flatten(found, marker_environment("x86_64", "3.12"))
    assert flat.requirements.splitlines() == [
        "--extra-index-url https://pypi.org/simple",
        "alpha",
    ]
    (ignored,) = flat.ignored
    assert ignored.text == "--extra-index-url http://127.0.0.1:8000/extra"
    assert ignored.reason == "http: is not https"
