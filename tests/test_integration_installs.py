"""Install commands in Dockerfiles and CI scripts, read as declarations (never run)."""

from __future__ import annotations

import pytest

from bot.core.limits import MAX_INSTALL_SCRIPTS, MAX_REQUIREMENTS_BYTES, InputRejected
from bot.integration.installs import MAX_INSTALLS_PER_FILE, installs_in, installs_in_files

# Shaped like vLLM 0.18's docker/Dockerfile (the kv-connectors stage): a RUN with
# continuations, a comment line inside them, a variable-built name and a requirement file.
DOCKERFILE = """\
FROM base AS final
# uv pip install --system commented-out
RUN --mount=type=cache,target=/root/.cache/uv \\
    CUDA_MAJOR="${CUDA_VERSION%%.*}"; \\
    if [ "$INSTALL_KV_CONNECTORS" = "true" ]; then \\
        if [ "$CUDA_MAJOR" -ge 13 ]; then \\
            uv pip install --system nixl-cu13; \\
        fi; \\
        uv pip install --system -r /tmp/kv_connectors.txt --no-build || ( \\
            # if the above fails, install from source
            uv pip install --system -r /tmp/kv_connectors.txt --no-build-isolation \\
        ); \\
        uv pip install --system --force-reinstall --no-deps nixl-cu${CUDA_MAJOR}; \\
    fi
RUN --mount=type=bind,from=build,src=/install,target=/install pip install /install/*.whl
RUN python3 -m pip install --progress-bar off "lm-eval[api]>=0.4.11" hf-transfer tblib==3.1.0
"""
# Shaped like vLLM 0.30's .buildkite/scripts/install-kv-offload.sh.
KV_OFFLOAD_SH = """\
#!/bin/bash
set -euo pipefail

# TODO: Use the PyPI wheel once it is published.
uv pip install --system \\
    "kvcr @ git+https://github.com/ai-dynamo/kvcr.git@v0.1.0"
NIXL_VERSION=$(uv pip show --system nixl | sed -n 's/^Version: //p')
sudo pip3 install git+https://github.com/org/depyf.git#egg=depyf \\
  https://example.invalid/wheels/deep_gemm-2.1.0-cp312-cp312-linux_x86_64.whl
echo "pip install not-a-command"
"""


def _names(path: str, text: str) -> list[tuple[str, int]]:
    return [(install.name, install.line) for install in installs_in(path, text)]


def test_a_dockerfile_installs_what_it_names_and_nothing_built_at_run_time():
    assert _names("docker/Dockerfile", DOCKERFILE) == [
        ("nixl-cu13", 7),
        ("lm-eval", 16),
        ("hf-transfer", 16),
        ("tblib", 16),
    ]
    # The option's value ("off") is not a requirement; neither are requirement files,
    # globs, commented-out lines or nixl-cu${CUDA_MAJOR}.


def test_a_ci_script_names_distributions_by_pep508_urls_eggs_and_wheels():
    installs = installs_in(".buildkite/scripts/install-kv-offload.sh", KV_OFFLOAD_SH)
    assert [(i.name, i.where) for i in installs] == [
        ("kvcr", ".buildkite/scripts/install-kv-offload.sh:6"),
        ("depyf", ".buildkite/scripts/install-kv-offload.sh:8"),
        ("deep-gemm", ".buildkite/scripts/install-kv-offload.sh:9"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        'RUN pip install "unbalanced\n',  # a quote never closed
        "RUN uv pip install\n",  # no arguments
        "pip install --index-url\n",  # an option without its value
        "RUN uv pip install -e . && pip install ./local/path ~/x\n",
        "\\\n" * 50,  # continuations only
        "uv pip install 'x; y' '!!bad'\n",
    ],
)
def test_odd_shell_names_nothing_and_never_raises(text):
    assert installs_in("docker/Dockerfile", text) == []


def test_bounds_are_findings_not_work():
    with pytest.raises(InputRejected, match="install script"):
        installs_in("docker/Dockerfile", "x" * (MAX_REQUIREMENTS_BYTES + 1))
    problems: list[str] = []
    files = ((f"tools/s{i}.sh", "pip install torch\n") for i in range(MAX_INSTALL_SCRIPTS + 5))
    found = installs_in_files(files, problems)
    assert len(found) == MAX_INSTALL_SCRIPTS
    assert problems == [
        f"over {MAX_INSTALL_SCRIPTS} install scripts match the rule: the rest were not read"
    ]
    problems.clear()
    assert installs_in_files([("docker/big", "#" * (MAX_REQUIREMENTS_BYTES + 1))], problems) == []
    assert problems and problems[0].startswith("`docker/big`")
    flood = "RUN pip install \\\n" + "".join(f"  p{i} \\\n" for i in range(6000)) + "\n"
    with pytest.raises(InputRejected, match=f"over {MAX_INSTALLS_PER_FILE:,} installs"):
        installs_in("docker/Dockerfile", flood)
