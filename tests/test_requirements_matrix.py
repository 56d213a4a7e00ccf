import pytest
from pydantic import ValidationError

from bot.requirements.config import RequirementsRules
from bot.requirements.matrix import build_targets, cells


def rules(**data):
    return RequirementsRules.model_validate(data)


def test_sets_inherit_their_platforms_architectures():
    matrix = rules(
        python_versions=["3.11", "3.12"],
        platforms={"cuda": {"entries": ["cuda.txt"], "archs": ["x86_64", "aarch64"]}},
        sets={
            "build-cuda": {"entries": ["build/cuda.txt"], "platform": "cuda", "kind": "build"},
            "docs": {"entries": ["docs.in"], "kind": "docs"},
        },
    )
    targets = {t.name: t for t in build_targets(matrix)}
    assert targets["build-cuda"].archs == ("x86_64", "aarch64")
    assert targets["build-cuda"].group == "cuda"
    assert targets["docs"].archs == ("x86_64",) and targets["docs"].group == "docs"
    assert targets["cuda"].kind == "runtime"
    labels = [(c.label, c.python) for c in cells(list(targets.values()), matrix.python_versions)]
    assert labels[:2] == [("cuda/x86_64", "3.11"), ("cuda/x86_64", "3.12")]
    assert len(labels) == 2 * (2 + 2 + 1)


def test_python_platform_defaults_overrides_and_unknown_architectures():
    matrix = rules(
        platforms={
            "cpu": {
                "entries": ["cpu.txt"],
                "archs": ["x86_64", "ppc64le", "s390x"],
                "python_platforms": {"x86_64": "x86_64-manylinux_2_39", "s390x": None},
            }
        }
    )
    (cpu,) = build_targets(matrix)
    assert cpu.python_platform("x86_64") == ("x86_64-manylinux_2_39", True)
    assert cpu.python_platform("aarch64") == ("aarch64-manylinux_2_28", True)
    assert cpu.python_platform("ppc64le") == (None, False)
    assert cpu.python_platform("s390x") == (None, False)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"sets": {"t": {"entries": ["t.in"], "platform": "nope"}}}, "unknown platform"),
        (
            {
                "platforms": {"cuda": {"entries": ["a"]}},
                "sets": {"cuda": {"entries": ["b"]}},
            },
            "both as platform and set",
        ),
        ({"platforms": {"cuda": {"entries": ["a"], "archz": []}}}, "Extra inputs"),
        ({"max_parallel": 0}, "greater than or equal"),
    ],
)
def test_bad_rules_are_rejected(data, message):
    with pytest.raises(ValidationError) as error:
        rules(**data)
    assert message in str(error.value)
