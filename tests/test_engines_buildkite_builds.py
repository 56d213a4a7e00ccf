"""Reading a pipeline's builds (bot/engines/buildkite_builds.py) from the local Buildkite over
real HTTP: by commit and by branch, newest first, pages followed and bounded, and every bad
answer one line."""

from __future__ import annotations

import httpx
import pytest
import respx

from bot.engines.base import EngineError
from bot.engines.buildkite_builds import BuildkiteBuilds, next_link
from bot.runtime.settings import CiSettings, Settings
from bot.testing.buildkite_server import FakeBuildkite

HEAD = "c" * 40


@pytest.fixture
def buildkite():
    with FakeBuildkite(token="bk-read") as server:
        yield server


def reader(server: FakeBuildkite, token: str = "bk-read") -> BuildkiteBuilds:
    ci = CiSettings(
        buildkite_organization="acme",
        buildkite_pipeline="ci",
        buildkite_token=token,
        buildkite_api_url=server.url,
    )
    found = BuildkiteBuilds.from_settings(Settings(ci=ci))
    assert found is not None
    return found


def test_builds_of_a_commit_newest_first_with_their_jobs(buildkite: FakeBuildkite) -> None:
    older = buildkite.add_build(HEAD, {"v1-attention-b200": "passed"}, branch="feature")
    buildkite.add_build("d" * 40, {"v1-attention-b200": "failed"})
    newer = buildkite.add_build(HEAD, {"v1-attention-b200": "running"}, branch="feature")
    listed = reader(buildkite).builds_for_commit(HEAD)
    assert [b["number"] for b in listed.builds] == [newer, older]
    assert not listed.cut and listed.read_pages == 1
    job = listed.builds[0]["jobs"][0]
    assert job["step_key"] == "v1-attention-b200" and job["state"] == "running"
    assert {"id", "type", "name", "soft_failed", "retried", "web_url"} <= set(job)


def test_a_branch_history_asks_for_retried_jobs(buildkite: FakeBuildkite) -> None:
    buildkite.add_build(HEAD, {"a": "passed"}, branch="main")
    buildkite.add_build("d" * 40, {"a": "passed"}, branch="other")
    listed = reader(buildkite).builds_for_branch("main")
    assert [b["branch"] for b in listed.builds] == ["main"]


@respx.mock
def test_the_filters_go_to_buildkite_as_its_query_parameters() -> None:
    client = BuildkiteBuilds(organization="acme", pipeline="ci", token="t", api_url="https://bk")
    route = respx.get("https://bk/v2/organizations/acme/pipelines/ci/builds").mock(
        return_value=httpx.Response(200, json=[])
    )
    client.builds_for_branch("main")
    client.builds_for_commit(HEAD)
    first, second = (dict(call.request.url.params) for call in route.calls)
    assert first == {"branch": "main", "include_retried_jobs": "true", "per_page": "100"}
    assert second == {"commit": HEAD, "per_page": "100"}
    assert route.calls[0].request.headers["authorization"] == "Bearer t"


def test_ten_thousand_builds_are_read_to_the_page_bound_and_said_cut(
    buildkite: FakeBuildkite,
) -> None:
    for _ in range(10_000):
        buildkite.add_build(HEAD, {"v1-attention-b200": "passed"})
    client = reader(buildkite)
    listed = client.builds_for_commit(HEAD, max_pages=3)
    assert len(listed.builds) == 300 and listed.cut and listed.read_pages == 3
    assert client.calls == 3
    # The newest first: the last one added leads.
    assert listed.builds[0]["number"] == 10_000


@pytest.mark.parametrize(
    ("status", "words", "transient"),
    [
        (401, "Buildkite answered 401: Authentication required", False),
        (404, "Buildkite answered 404: No pipeline found", False),
        (500, "Buildkite answered 500", True),
    ],
)
def test_a_refusing_api_is_one_line(buildkite: FakeBuildkite, status, words, transient) -> None:
    buildkite.list_status = status
    with pytest.raises(EngineError) as raised:
        reader(buildkite).builds_for_commit(HEAD)
    assert str(raised.value).startswith(words) and "\n" not in str(raised.value)
    assert raised.value.transient is transient


def test_a_wrong_token_is_refused_by_the_server_and_never_shown(buildkite: FakeBuildkite) -> None:
    with pytest.raises(EngineError) as raised:
        reader(buildkite, token="not-the-token").builds_for_commit(HEAD)
    assert "401" in str(raised.value) and "not-the-token" not in str(raised.value)


@respx.mock
def test_answers_that_are_not_a_build_list_are_one_line() -> None:
    client = BuildkiteBuilds(organization="acme", pipeline="ci", token="t", api_url="https://bk")
    route = respx.get("https://bk/v2/organizations/acme/pipelines/ci/builds")
    route.mock(return_value=httpx.Response(200, json={"builds": []}))
    with pytest.raises(EngineError, match="not a list"):
        client.builds_for_commit(HEAD)
    route.mock(return_value=httpx.Response(200, content=b"<html>"))
    with pytest.raises(EngineError, match="not JSON"):
        client.builds_for_commit(HEAD)
    route.mock(side_effect=httpx.ConnectTimeout("slow"))
    with pytest.raises(EngineError, match="could not be reached") as raised:
        client.builds_for_commit(HEAD)
    assert raised.value.transient


@respx.mock
def test_a_next_link_to_another_host_is_not_followed() -> None:
    client = BuildkiteBuilds(organization="acme", pipeline="ci", token="t", api_url="https://bk")
    respx.get("https://bk/v2/organizations/acme/pipelines/ci/builds").mock(
        return_value=httpx.Response(
            200, json=[{"number": 1}], headers={"Link": '<https://evil/steal?page=2>; rel="next"'}
        )
    )
    evil = respx.get("https://evil/steal")
    with pytest.raises(EngineError, match="points elsewhere"):
        client.builds_for_commit(HEAD)
    assert not evil.called
    # A history read (partial) keeps what came before and says where it stopped.
    listed = client.builds_for_branch("main", max_pages=3, partial=True)
    assert [b["number"] for b in listed.builds] == [1] and listed.cut
    assert listed.stopped == "page 2: Buildkite's next-page link points elsewhere; not followed"
    assert not evil.called


@respx.mock
def test_a_page_over_the_byte_bound_is_refused(monkeypatch) -> None:
    monkeypatch.setattr("bot.engines.buildkite_builds.MAX_PAGE_BYTES", 1000)
    client = BuildkiteBuilds(organization="acme", pipeline="ci", token="t", api_url="https://bk")
    respx.get("https://bk/v2/organizations/acme/pipelines/ci/builds").mock(
        return_value=httpx.Response(200, json=[{"number": n, "pad": "x" * 50} for n in range(50)])
    )
    with pytest.raises(EngineError, match="over 1000 bytes"):
        client.builds_for_commit(HEAD)


def test_the_link_header_is_read_as_rfc_8288() -> None:
    header = '<https://a/b?page=1>; rel="prev", <https://a/b?page=3>; rel="next"'
    assert next_link(header) == "https://a/b?page=3"
    assert next_link('<https://a/b?page=9>; rel="last"') is None
    assert next_link(None) is None


def test_not_configured_is_none() -> None:
    assert BuildkiteBuilds.from_settings(Settings(ci=CiSettings())) is None


def test_seeded_history_lists_retried_jobs_only_when_asked(buildkite: FakeBuildkite) -> None:
    from bot.testing.buildkite_shapes import history

    buildkite.seed_history(history({"kernels": "RP"}, newest=50))
    listed = reader(buildkite).builds_for_branch("main")
    assert [b["number"] for b in listed.builds] == [50, 49]
    assert [j["state"] for j in listed.builds[0]["jobs"] if j["type"] == "script"] == [
        "failed",
        "passed",
    ]
    plain = reader(buildkite).builds_for_branch("main", retried_jobs=False)
    assert [j["state"] for j in plain.builds[0]["jobs"] if j["type"] == "script"] == ["passed"]
    one = reader(buildkite).build(50)
    assert one["jobs"][1]["retried_in_job_id"] == one["jobs"][2]["id"]


def test_a_partial_read_keeps_the_pages_before_a_failure(buildkite: FakeBuildkite) -> None:
    from bot.testing.buildkite_shapes import history

    buildkite.seed_history(history({"kernels": "P" * 150}, newest=500))
    buildkite.stall_from_page, buildkite.stall_seconds = 2, 1.0
    slow = BuildkiteBuilds(
        organization="acme",
        pipeline="ci",
        token="bk-read",
        api_url=buildkite.url,
        client=httpx.Client(timeout=0.2),
    )
    listed = slow.builds_for_branch("main", partial=True)
    assert len(listed.builds) == 100 and listed.cut and listed.read_pages == 1
    assert listed.stopped == "page 2: Buildkite could not be reached: ReadTimeout"
    with pytest.raises(EngineError, match="could not be reached"):
        slow.builds_for_branch("main")


def test_a_build_that_is_not_an_object_is_one_line() -> None:
    with respx.mock(base_url="https://api.buildkite.com") as mock:
        mock.get("/v2/organizations/acme/pipelines/ci/builds/7").respond(json=[1])
        builds = BuildkiteBuilds(organization="acme", pipeline="ci", token="t")
        with pytest.raises(EngineError, match="not an object"):
            builds.build(7)
