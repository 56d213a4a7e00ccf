"""The Buildkite engine over real HTTP against the local Buildkite test server, and respx units."""

import json

import httpx
import pytest
import respx

from bot.engines.base import BuildRequest, EngineError, make_engine
from bot.engines.buildkite import BuildkiteEngine
from bot.runtime.settings import CiSettings, Settings
from bot.testing.buildkite_server import FakeBuildkite

REQUEST = BuildRequest(
    repo="vllm-project/vllm",
    pr_number=41778,
    head_sha="a" * 40,
    branch="tokenspeed-mla",
    base_branch="main",
    message="prbot: GPU jobs for #41778",
    step_keys=("v1-attention-b200", "attention-benchmarks-smoke-test-b200"),
    meta_data={"prbot-job": "7"},
    labels=("ready",),
)


@pytest.fixture(scope="module")
def buildkite():
    with FakeBuildkite(token="bk-api") as server:
        yield server


def engine(server: FakeBuildkite) -> BuildkiteEngine:
    ci = CiSettings(
        buildkite_organization="acme",
        buildkite_pipeline="ci",
        buildkite_token="bk-api",
        buildkite_api_url=server.url,
    )
    return make_engine("buildkite", Settings(ci=ci))


def test_a_build_is_created_as_vllms_ci_run_creates_it(buildkite: FakeBuildkite) -> None:
    ref = engine(buildkite).create_build(REQUEST)
    body = buildkite.creates()[-1]
    assert body["commit"] == "a" * 40 and body["branch"] == "tokenspeed-mla"
    assert body["pull_request_id"] == 41778 and body["pull_request_base_branch"] == "main"
    assert body["pull_request_repository"] == "https://github.com/vllm-project/vllm.git"
    assert json.loads(body["env"]["VLLM_CI_ONLY_STEP_KEYS"]) == list(REQUEST.step_keys)
    assert body["meta_data"] == {"prbot-job": "7"} and body["ignore_pipeline_branch_filters"]
    # Nothing but what the build needs: no token, no prbot setting.
    assert set(body["env"]) == {"VLLM_CI_ONLY_STEP_KEYS"}
    assert "bk-api" not in json.dumps(body)
    assert ref.number is not None and ref.web_url.endswith(f"/builds/{ref.number}")


def test_job_states_and_artifacts_are_read_back(buildkite: FakeBuildkite) -> None:
    client = engine(buildkite)
    ref = client.create_build(REQUEST)
    states = {job.step_key: job for job in client.jobs(ref)}
    assert {key: job.state for key, job in states.items()} == dict.fromkeys(
        REQUEST.step_keys, "scheduled"
    )
    results = b'[{"config": {"backend": "TOKENSPEED_MLA", "batch_spec": "16q1s1k"}}]'
    buildkite.finish_job(ref.number, "v1-attention-b200", "passed", deliver=False)
    buildkite.finish_job(
        ref.number,
        "attention-benchmarks-smoke-test-b200",
        "failed",
        artifacts={"results.json": results},
        deliver=False,
    )
    states = {job.step_key: job for job in client.jobs(ref)}
    assert states["v1-attention-b200"].state == "passed"
    bench = states["attention-benchmarks-smoke-test-b200"]
    assert bench.state == "failed"
    (artifact,) = client.artifacts(ref, bench)
    assert artifact.filename == "results.json"
    assert client.download(artifact, limit=1_000_000) == results
    with pytest.raises(EngineError, match="over 10"):
        client.download(artifact, limit=10)


def test_a_wrong_token_is_one_line(buildkite: FakeBuildkite) -> None:
    wrong = BuildkiteEngine(organization="acme", pipeline="ci", token="nope", api_url=buildkite.url)
    with pytest.raises(EngineError) as refused:
        wrong.create_build(REQUEST)
    assert str(refused.value) == "Buildkite answered 401: Authentication required"


def test_an_unknown_engine_is_named() -> None:
    with pytest.raises(EngineError, match="no CI engine 'jenkins'"):
        make_engine("jenkins", Settings())


def test_secrets_cannot_ride_in_the_build_env() -> None:
    with pytest.raises(ValueError, match="PRBOT_WEBHOOK_SECRET"):
        BuildRequest(
            repo="a/b",
            pr_number=1,
            head_sha="a",
            branch="b",
            base_branch="main",
            message="m",
            step_keys=(),
            env={"PRBOT_WEBHOOK_SECRET": "s"},
        )


@respx.mock
def test_an_unreachable_buildkite_is_one_line() -> None:
    respx.post("https://api.buildkite.com/v2/organizations/acme/pipelines/ci/builds").mock(
        side_effect=httpx.ConnectError("refused")
    )
    client = BuildkiteEngine(organization="acme", pipeline="ci", token="t")
    with pytest.raises(EngineError, match="could not be reached: ConnectError"):
        client.create_build(REQUEST)


@respx.mock
def test_an_error_without_json_is_one_line() -> None:
    respx.post("https://api.buildkite.com/v2/organizations/acme/pipelines/ci/builds").mock(
        return_value=httpx.Response(502, text="<html>bad gateway</html>")
    )
    client = BuildkiteEngine(organization="acme", pipeline="ci", token="t")
    with pytest.raises(EngineError, match="answered 502: no message"):
        client.create_build(REQUEST)


def test_a_finished_job_is_retried_once_in_its_build(buildkite: FakeBuildkite) -> None:
    bk = engine(buildkite)
    ref = bk.create_build(REQUEST)
    buildkite.finish_job(ref.number, "v1-attention-b200", "failed", deliver=False)
    failed = buildkite.builds[ref.number].current("v1-attention-b200")
    again = bk.retry_job(ref, failed.id)
    assert again["state"] == "scheduled" and again["retries_count"] == 1
    assert again["step_key"] == "v1-attention-b200" and again["id"] != failed.id
    # The build shows the new attempt; the retried one only with include_retried_jobs.
    assert [j.job_id for j in bk.jobs(ref) if j.step_key == "v1-attention-b200"] == [again["id"]]
    # Buildkite refuses a second retry of the same job.
    with pytest.raises(EngineError, match="422"):
        bk.retry_job(ref, failed.id)
