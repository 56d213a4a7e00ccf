"""Import names to declared distributions, declarations read by the requirements parser."""

from __future__ import annotations

from bot.integration.distributions import (
    candidate_distributions,
    declared_as,
    declared_distributions,
)

# Shaped like vLLM 0.21's requirements/cuda.txt and kv_connectors.txt, its pyproject and
# its setup.py extras.
CUDA_TXT = """\
-r common.txt
--extra-index-url https://download.pytorch.org/whl/cu129
# QuACK and Cutlass DSL for FA4 (cute-DSL implementation)
nvidia-cutlass-dsl[cu13]==4.4.2 ; platform_machine == "x86_64"
quack-kernels>=0.3.3
flashinfer-python==0.6.8 \\
    --hash=sha256:0123
"""
KV_TXT = "lmcache >= 0.3.9\nmooncake-transfer-engine >= 0.3.8\napache-tvm-ffi==0.1.11\n"
PYPROJECT = """\
[build-system]
requires = ["setuptools>=77", "torch == 2.9.0"]
[project]
name = "vllm"
dependencies = ["regex", "cachetools"]
[project.optional-dependencies]
tensorizer = ["tensorizer==2.10.1"]
"""
SETUP = """\
setup(
    install_requires=get_requirements(),
    extras_require={"audio": ["soundfile", "mistral_common[audio]"], "b12x": ["b12x==1.5.1"]},
    description="cuda",  # not a requirement: not under a requirement keyword
)
"""


def _declared():
    return declared_distributions(
        [
            ("requirements/cuda.txt", CUDA_TXT),
            ("requirements/kv_connectors.txt", KV_TXT),
            ("pyproject.toml", PYPROJECT),
            ("setup.py", SETUP),
        ]
    )


def test_every_kind_of_declaration_is_read():
    declared = _declared()
    for name in ("nvidia-cutlass-dsl", "quack-kernels", "flashinfer-python", "lmcache"):
        assert name in declared.names
    assert declared.names["torch"] == "pyproject.toml"
    assert {"regex", "tensorizer", "soundfile", "mistral-common", "b12x"} <= set(declared.names)
    assert "cuda" not in declared.names and "get-requirements" not in declared.names
    assert "audio" not in declared.names  # the name of an extra is not a distribution
    assert declared.problems == []


def test_import_names_resolve_through_mapping_conventions_and_prefixes():
    declared = _declared()
    assert declared_as("cutlass", ["nvidia-cutlass-dsl"], declared) == "nvidia-cutlass-dsl"
    assert declared_as("cutlass", [], declared) is None  # no rule of spelling finds it
    assert declared_as("quack", [], declared) == "quack-kernels"
    assert declared_as("mooncake", [], declared) == "mooncake-transfer-engine"
    assert declared_as("flashinfer", [], declared) == "flashinfer-python"
    assert declared_as("mistral_common", [], declared) == "mistral-common"
    assert declared_as("tokenspeed_mla", [], declared) is None
    assert declared_as("tvm_ffi", [], declared) == "apache-tvm-ffi"  # a vendor's prefix
    assert declared_as("ffi_tvm", [], declared) is None


def test_installed_metadata_is_a_source():
    # prbot's own environment has PyYAML installed, whose top_level.txt names "yaml".
    assert "pyyaml" in candidate_distributions("yaml", [])
    assert candidate_distributions("zmq", ["pyzmq"])[0] == "pyzmq"


def test_a_broken_pyproject_is_a_problem_not_a_crash():
    declared = declared_distributions([("pyproject.toml", "[project\n"), ("setup.py", "x(")])
    assert declared.names == {}
    assert [problem.split(" ", 1)[0] for problem in declared.problems] == [
        "`pyproject.toml`",
        "`setup.py`",
    ]


def test_odd_pyproject_shapes_declare_what_they_can():
    odd = (
        "[project]\ndependencies = 3\n[project.optional-dependencies]\n"
        'a = "not-a-list"\nb = ["ok-dist", 7]\n'
    )
    declared = declared_distributions([("pyproject.toml", odd), ("x/pyproject.toml", "project=1")])
    assert set(declared.names) == {"ok-dist"}


def test_an_extra_is_not_a_default_install_unless_a_requirement_file_also_declares_it():
    declared = declared_distributions(
        [("setup.py", SETUP), ("requirements/audio.txt", "soundfile\n")]
    )
    assert "b12x" in declared.names and not declared.by_default("b12x")
    assert declared.by_default("soundfile")  # an extra, and a requirement file too
    pyproject = declared_distributions([("pyproject.toml", PYPROJECT)])
    assert pyproject.by_default("regex") and not pyproject.by_default("tensorizer")
    assert not pyproject.by_default("never-declared")
