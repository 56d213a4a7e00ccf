"""A build's jobs read back into the records over real HTTP: states, links, benchmark JSON
artifacts (bounded, parsed as data), a blocked build, replays; and no token in the logs."""

from __future__ import annotations

import json
import logging

import pytest

from bot.core.redact import RedactingFilter
from bot.engines.base import BuildRequest
from bot.engines.buildkite import BuildkiteEngine
from bot.jobs.benchmark_results import MAX_LABEL_CHARS
from bot.store import jobs as store
from bot.testing.buildkite_server import FakeBuildkite
from bot.worker.ci.results import MAX_ARTIFACT_BYTES, MAX_CONFIGS, record_state, refresh_build

HEAD = "a" * 40


@pytest.fixture
def buildkite():
    with FakeBuildkite(token="bk-secret-api-token") as server:
        yield server


def client(server) -> BuildkiteEngine:
    return BuildkiteEngine(
        organization="acme", pipeline="ci", token="bk-secret-api-token", api_url=server.url
    )


def dispatched(db, server, *jobs: tuple[str, str, str]) -> tuple[int, list[store.JobRecord]]:
    """Claim ``(name, kind, step key)`` jobs and create their one build."""
    for name, kind, step in jobs:
        spec = store.JobSpec(
            store.JobKey("acme/widgets", 7, HEAD, name), HEAD, kind, "buildkite", "b200", step
        )
        assert store.claim(db, spec, attempt=1, dispatch_key="key-1")
    request = BuildRequest(
        "acme/widgets", 7, HEAD, "f", "main", "m", tuple(step for _, _, step in jobs)
    )
    ref = client(server).create_build(request)
    store.record_build(
        db,
        "key-1",
        engine_name="buildkite",
        build_id=ref.id,
        build_number=ref.number,
        build_url=ref.web_url,
    )
    return ref.number, store.records_for_head(db, "acme/widgets", 7, HEAD)


def states(db) -> dict[str, tuple[str, str | None]]:
    return {
        r.key.name: (r.state, r.error) for r in store.records_for_head(db, "acme/widgets", 7, HEAD)
    }


def test_states_and_links_follow_the_engine(engine, buildkite) -> None:
    number, records = dispatched(engine, buildkite, ("smoke", "gpu_smoke", "s1"))
    assert refresh_build(engine, client(buildkite), records).changed == 1  # its link
    buildkite.finish_job(number, "s1", "failed", deliver=False)
    records = store.records_for_head(engine, "acme/widgets", 7, HEAD)
    assert refresh_build(engine, client(buildkite), records).changed == 1
    assert states(engine) == {"smoke": ("failed", None)}
    assert store.records_for_head(engine, "acme/widgets", 7, HEAD)[0].job_url.endswith(
        f"/builds/{number}#{buildkite.builds[number].jobs[0].id}"
    )
    # Replayed news about a finished job changes nothing.
    records = store.records_for_head(engine, "acme/widgets", 7, HEAD)
    assert refresh_build(engine, client(buildkite), records).changed == 0


def test_a_blocked_build_finishing_without_the_step_cancels_it(engine, buildkite) -> None:
    number, records = dispatched(engine, buildkite, ("smoke", "gpu_smoke", "s1"))
    with buildkite.lock:
        buildkite.builds[number].jobs.clear()  # the step sat behind a block step
    assert refresh_build(engine, client(buildkite), records).changed == 0
    assert refresh_build(engine, client(buildkite), records, build_finished=True).changed == 1
    state, error = states(engine)["smoke"]
    assert state == "canceled" and "without running this step" in error


def test_benchmark_artifacts_become_runs_and_bad_ones_a_reason(engine, buildkite) -> None:
    number, records = dispatched(
        engine, buildkite, ("bench", "benchmark", "b1"), ("bad", "benchmark", "b2")
    )
    run = [{"config": {"backend": "X", "batch_spec": "1q"}, "mean_time": 0.5}]
    buildkite.finish_job(
        number,
        "b1",
        "passed",
        artifacts={
            "r-1.json": json.dumps(run).encode(),
            "r-2.json": json.dumps(run).encode(),
            "log.txt": b"not a result",
        },
        deliver=False,
    )
    buildkite.finish_job(
        number,
        "b2",
        "passed",
        artifacts={"r.json": b"{not json", "big.json": b"[" + b" " * MAX_ARTIFACT_BYTES + b"]"},
        deliver=False,
    )
    refreshed = refresh_build(engine, client(buildkite), records)
    assert refreshed.changed == 2 and len(refreshed.problems) == 2
    saved = {r.key.name: r for r in store.records_for_head(engine, "acme/widgets", 7, HEAD)}
    assert saved["bench"].state == "passed"
    assert saved["bench"].results == [{"X 1q": 0.5}, {"X 1q": 0.5}]
    assert saved["bad"].state == "failed" and "no benchmark results" in saved["bad"].error


def test_a_results_file_keeps_a_bounded_number_of_configurations(engine, buildkite) -> None:
    number, records = dispatched(engine, buildkite, ("bench", "benchmark", "b1"))
    many = [
        {"config": {"backend": "X", "batch_spec": f"{i}q"}, "mean_time": 0.5}
        for i in range(MAX_CONFIGS + 5)
    ]
    files = {"r.json": json.dumps(many).encode()}
    buildkite.finish_job(number, "b1", "passed", artifacts=files, deliver=False)
    refreshed = refresh_build(engine, client(buildkite), records)
    assert "the first 500 kept" in refreshed.problems[0]
    (saved,) = store.records_for_head(engine, "acme/widgets", 7, HEAD)
    assert len(saved.results[0]) == MAX_CONFIGS


def test_engine_words_map_to_report_states() -> None:
    assert record_state("scheduled") == "queued" and record_state("running") == "running"
    assert record_state("broken") == "canceled" and record_state("expired") == "timed_out"
    assert record_state("something-new") == "queued"


def test_no_token_or_signed_url_reaches_the_logs(engine, buildkite, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    number, records = dispatched(engine, buildkite, ("bench", "benchmark", "b1"))
    run = [{"config": {"backend": "X", "batch_spec": "1q"}, "mean_time": 0.5}]
    artifacts = {"r.json": json.dumps(run).encode()}
    buildkite.finish_job(number, "b1", "passed", artifacts=artifacts, deliver=False)
    refresh_build(engine, client(buildkite), records)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "/storage/" in text and "X-Amz-Signature" not in text
    assert "bk-secret-api-token" not in text
    shown = RedactingFilter()
    shown.secrets.add("s3cr3t")
    assert shown.redact("GET https://s3/x?X-Amz-Signature=abc s3cr3t") == "GET https://s3/x?… ***"


def test_a_results_file_label_is_bounded_and_long_ones_stay_apart(engine, buildkite) -> None:
    # On main a 200 KB label took the whole jobs share of the comment (issue 21, item 14).
    number, records = dispatched(engine, buildkite, ("bench", "benchmark", "b1"))
    long_a, long_b = "A" * 200_000, "A" * 199_999 + "B"
    run = [
        {"config": {"backend": long_a, "batch_spec": "1q"}, "mean_time": 0.5},
        {"config": {"backend": long_b, "batch_spec": "1q"}, "mean_time": 0.7},
        {"config": {"backend": "FLASH_ATTN", "batch_spec": "1q"}, "mean_time": 0.9},
    ]
    files = {"r.json": json.dumps(run).encode()}
    buildkite.finish_job(number, "b1", "passed", artifacts=files, deliver=False)
    refresh_build(engine, client(buildkite), records)
    (saved,) = store.records_for_head(engine, "acme/widgets", 7, HEAD)
    labels = list(saved.results[0])
    assert len(labels) == 3 and "FLASH_ATTN 1q" in labels
    assert all(len(label) <= MAX_LABEL_CHARS for label in labels)
    assert sorted(saved.results[0].values()) == [0.5, 0.7, 0.9]


def test_a_paired_job_keeps_both_sides_and_the_section_judges_them(engine, buildkite) -> None:
    import random

    from bot.core.sections import Section, Status
    from bot.jobs.progress import overlay
    from tests.bench_helpers import machine_csv, run_json

    number, records = dispatched(engine, buildkite, ("bench", "benchmark", "b1"))
    rng = random.Random(9)
    files = {f"bench/{side}/machine.csv": machine_csv().encode() for side in ("base", "head")}
    for n in range(1, 6):
        files[f"bench/base/run-{n}.json"] = run_json(rng).encode()
        files[f"bench/head/run-{n}.json"] = run_json(rng, slowdown=0.10).encode()
    buildkite.finish_job(number, "b1", "passed", artifacts=files, deliver=False)
    assert refresh_build(engine, client(buildkite), records).changed == 1
    (saved,) = store.records_for_head(engine, "acme/widgets", 7, HEAD)
    (kept,) = saved.results
    assert sorted(kept["paired"]["head"]["runs"]) == ["1", "2", "3", "4", "5"]
    assert "GPU-3f81f7ad" in kept["paired"]["base"]["machine"]
    finding = {"name": "bench", "kind": "benchmark", "status": "selected", "hardware": "h200"}
    drawn = overlay(Section("jobs", Status.PASS, "1 job", [finding]), [saved])
    rows = {c["config"]: c for c in drawn.findings[0]["comparisons"]}
    assert rows["CUDNN q2k"]["verdict"] == "regression" and rows["CUDNN q2k"]["paired"]
    (bench,) = drawn.data["benchmarks"]
    assert bench["runs"] == "5 paired rounds (ABBA, one GPU)"
    assert "on NVIDIA H200 GPU-3f81f7ad" in bench["what"] and bench["chart"]
