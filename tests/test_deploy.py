"""deploy/: every file is checked by the tool its platform uses, and read as that platform reads it.

Docker is not on these machines, so the Dockerfile is linted with hadolint, the compose file is
validated against the Compose specification's schema, and the Kubernetes manifests against
Kubernetes' own schemas (all three from the dev group). Each validator is first shown a broken
file, so a validator that accepts anything cannot pass these tests.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from bot.runtime.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
KUBERNETES = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
UNITS = [DEPLOY / "prbot.service", DEPLOY / "prbot-worker.service"]


def _tool(name: str) -> str:
    """A dev-group tool from this environment (not whatever is on PATH)."""
    path = Path(sys.prefix) / "bin" / name
    if not path.exists():
        pytest.fail(f"{name} is missing: `uv sync` installs the dev group")
    return str(path)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def environment_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines as systemd's EnvironmentFile= and compose's env_file: read them.

    Both take a line starting with ``#`` as a comment and everything after the first ``=``
    as the value; neither strips a trailing ``# ...``.
    """
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value
    return values


def test_env_example_is_read_by_systemd_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    # The old example's shape, read the way systemd reads it, keeps the comment in the secret.
    assert environment_file("PRBOT_WEBHOOK_SECRET=old   # rotate")["PRBOT_WEBHOOK_SECRET"] == (
        "old   # rotate"
    )
    values = environment_file((DEPLOY / "prbot.env.example").read_text())
    assert values, "the example sets nothing"
    for key, value in values.items():
        assert key.startswith("PRBOT_"), key
        assert "#" not in value and value == value.strip(), f"{key}={value!r}"
    for key in list(values):
        monkeypatch.delenv(key, raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    settings = Settings.from_env()
    assert settings.webhook_secrets == ("change-me",)
    assert settings.default_rules in {path.stem for path in (ROOT / "rules").glob("*.yaml")}, (
        settings.default_rules
    )


def test_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    hadolint = _tool("hadolint")
    broken = tmp_path / "Dockerfile"
    broken.write_text("FROM python\nRUN apt-get update && apt-get install -y git\n")
    assert _run(hadolint, str(broken)).returncode != 0, "hadolint accepted a bad Dockerfile"
    done = _run(hadolint, str(DEPLOY / "Dockerfile"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_builds_the_locked_tree_for_a_non_root_user_with_git_and_a_sandbox() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert len(stages) >= 2, "multi-stage: the build tools stay out of the runtime image"
    assert "uv sync --locked --no-dev" in text
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    assert re.search(r"^HEALTHCHECK .*?/healthz", text, re.MULTILINE | re.DOTALL)
    assert re.search(r"apt-get install[^\n]*\bgit\b", text)
    assert "prbot-sandbox" in text
    # The image's uv is the one the requirements check pins.
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (uv_pin,) = [pin for pin in pins if pin.startswith("uv==")]
    assert f"pip install --no-cache-dir {uv_pin}" in text


def test_compose_file_matches_the_compose_specification(tmp_path: Path) -> None:
    checker = _tool("check-jsonschema")
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    broken = tmp_path / "compose.yaml"
    compose_broken = {**compose, "services": {"worker": {"image": "x", "restart_policy": "no"}}}
    broken.write_text(yaml.safe_dump(compose_broken))
    schema = ["--builtin-schema", "vendor.compose-spec"]
    assert _run(checker, *schema, str(broken)).returncode != 0, "the schema accepted a bad file"
    done = _run(checker, *schema, str(DEPLOY / "compose.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr

    services = compose["services"]
    assert {"db", "serve", "worker"} <= set(services)
    assert services["db"]["image"].startswith("postgres:")
    assert "--no-worker" in services["serve"]["command"]
    assert services["worker"]["command"] == ["worker"]
    assert services["worker"]["deploy"]["replicas"] == 2
    for name in ("serve", "worker"):
        url = services[name]["environment"]["PRBOT_DATABASE_URL"]
        assert url.startswith("postgresql://") and "@db:" in url
    assert services["worker"]["environment"]["PRBOT_SANDBOX_USER"] == "prbot-sandbox"


def test_kubernetes_manifests_match_the_kubernetes_schemas(tmp_path: Path) -> None:
    validate = _tool("kubernetes-validate")
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  lables: {a: b}\ndata: {}\n"
    )
    assert _run(validate, "--strict", str(broken)).returncode != 0, "a typo passed --strict"
    done = _run(validate, "--strict", *map(str, KUBERNETES))
    assert done.returncode == 0, done.stdout + done.stderr

    documents = [doc for path in KUBERNETES for doc in yaml.safe_load_all(path.read_text())]
    kinds = {(doc["kind"], doc["metadata"]["name"]) for doc in documents}
    assert {("Deployment", "prbot-serve"), ("Deployment", "prbot-worker")} <= kinds
    assert {"Service", "Secret", "ConfigMap"} <= {kind for kind, _ in kinds}
    serve = next(doc for doc in documents if doc["metadata"]["name"] == "prbot-serve")
    (container,) = serve["spec"]["template"]["spec"]["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "--no-worker" in container["args"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda path: path.name)
def test_systemd_unit_runs_a_prebuilt_venv_in_a_read_only_system(
    unit: Path, tmp_path: Path
) -> None:
    text = unit.read_text()
    directives = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and line[:1].isalpha()
    )
    assert "uv run" not in text, "uv run at start needs a writable project and uv cache"
    assert directives["ExecStart"].startswith("/opt/prbot/.venv/bin/prbot ")
    assert directives["ProtectSystem"] == "strict"
    assert directives["StateDirectory"] == "prbot"
    assert "/var/lib/prbot" in directives["ReadWritePaths"].split()
    assert directives["EnvironmentFile"] == "/etc/prbot/prbot.env"

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify checks syntax and that ExecStart is executable; point it at this venv's prbot.
    local = tmp_path / unit.name
    local.write_text(
        text.replace("/opt/prbot/.venv/bin/prbot", str(Path(sys.prefix) / "bin/prbot"))
    )
    done = _run(analyze, "verify", str(local))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_actions_workflow_is_valid_and_takes_every_input_prbot_sends() -> None:
    from bot.engines.actions import ENV_INPUTS

    workflow = DEPLOY / "gpu-bench" / "prbot-gpu.yml"
    done = _run(
        _tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = yaml.safe_load(workflow.read_text())
    inputs = data[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads "on" as True
    # A dispatch with an input the workflow does not declare is refused by GitHub (422).
    assert {"prbot_dispatch", "commit", "pr", "steps", *ENV_INPUTS.values()} == set(inputs)
    assert data["run-name"] == "prbot ${{ inputs.prbot_dispatch }}"
    script = data["jobs"]["benchmark"]["steps"][2]["run"]
    assert "python3 -m bot bench run" in script and "--output-json {output}" in script


def test_the_buildkite_step_runs_one_paired_job_and_uploads_its_layout() -> None:
    from bot.engines.base import ALLOWED_BUILD_ENV

    text = (DEPLOY / "gpu-bench" / "buildkite-step.yaml").read_text()
    (step,) = yaml.safe_load(text)["steps"]
    assert step["key"] == "prbot-benchmark-h100" and step["optional"] is True
    script = "\n".join(step["commands"])
    assert "python3 -m bot bench run" in script and "--gpus device={gpu}" in script
    assert set(step["artifact_paths"]) == {"bench/base/*", "bench/head/*", "bench/job.json"}
    named = {name for name in ALLOWED_BUILD_ENV if name.startswith("PRBOT_BENCHMARK_")}
    assert all(name in text for name in named), named
