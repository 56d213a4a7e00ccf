"""Dispatch over real HTTP (the local Buildkite): one build per claim, none on replays,
a crash between create and record resumed without a second build, a moved head refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.engines.base import BuildRequest, EngineError
from bot.engines.buildkite import BuildkiteEngine
from bot.jobs.planner import Head, WantedJob, plan
from bot.store import jobs as store
from bot.testing.buildkite_server import FakeBuildkite
from bot.worker.ci.dispatch import PullContext, execute

HEAD, BASE = "a" * 40, "b" * 40
SMOKE = WantedJob("V1 attention (B200)", "gpu_smoke", "b200", "buildkite", "r", "v1-attention-b200")
BENCH = WantedJob(
    "MLA decode benchmark",
    "benchmark",
    "b200",
    "buildkite",
    "r",
    "prbot-attention-benchmark-b200",
    ("TOKENSPEED_MLA",),
    "configs/mla_decode.yaml",
)
TRUSTED = Head("acme/widgets", 7, HEAD, BASE, trusted=True, benchmark_runs=3)
PULL = PullContext("feature", "main", ("ready",))


@pytest.fixture
def buildkite():
    with FakeBuildkite(token="bk-api") as server:
        yield server


def engines_for(server: FakeBuildkite):
    engine = BuildkiteEngine(organization="acme", pipeline="ci", token="bk-api", api_url=server.url)
    return lambda name: engine


def records(db: sa.Engine) -> dict:
    found = store.records_for_head(db, "acme/widgets", 7, HEAD)
    return {(r.key.name, r.key.side): r for r in found}


def run(db, server, tmp_path: Path, *, mode="event", head_now=HEAD, head=TRUSTED, engines=None):
    wanted = [SMOKE, BENCH]
    result = plan(wanted, head, records(db), mode=mode, key_secret=b"test secret")
    return execute(
        db,
        result,
        head,
        PULL,
        engines=engines or engines_for(server),
        current_head=lambda: head_now,
        lock_dir=tmp_path / "locks",
    )


def test_one_create_per_build_and_none_on_a_replay(engine, buildkite, tmp_path) -> None:
    outcome = run(engine, buildkite, tmp_path)
    assert outcome.created == 2 and buildkite.count_calls("POST", "/builds") == 2
    smoke, head_bench = buildkite.creates()
    assert json.loads(smoke["env"]["VLLM_CI_ONLY_STEP_KEYS"]) == ["v1-attention-b200"]
    assert smoke["pull_request_labels"] == ["ready"] and smoke["branch"] == "feature"
    assert head_bench["env"]["PRBOT_BENCHMARK_BACKENDS"] == "TOKENSPEED_MLA"
    # One job per benchmark, at head; its base side runs in it, at the merge base.
    assert (head_bench["commit"], head_bench["branch"]) == (HEAD, "feature")
    assert head_bench["env"]["PRBOT_BENCHMARK_BASE_COMMIT"] == BASE
    saved = records(engine)
    assert {r.state for r in saved.values()} == {"queued"}
    assert all(r.build_id and r.build_url for r in saved.values())
    # The same event again (a redelivery, a retry): no call to create anything.
    assert run(engine, buildkite, tmp_path).created == 0
    assert buildkite.count_calls("POST", "/builds") == 2


def test_a_crash_after_create_is_resumed_without_a_second_build(engine, buildkite, tmp_path):
    real = engines_for(buildkite)("buildkite")

    class CrashAfterCreate:
        name = "buildkite"

        def create_build(self, request: BuildRequest):
            real.create_build(request)
            raise SystemExit("worker killed between create and record")

        def find_build(self, key: str, commit: str, *, repo: str, pr: int | None = None):
            return real.find_build(key, commit, repo=repo, pr=pr)

    with pytest.raises(SystemExit):
        run(engine, buildkite, tmp_path, engines=lambda name: CrashAfterCreate())
    assert buildkite.count_calls("POST", "/builds") == 1
    (claimed,) = [r for r in records(engine).values() if r.claimed_without_build]
    # The claim survived the crash, without its build id. Meanwhile the PR's own build in the
    # pipeline set the same key in its meta-data (PR code can): it is not the dispatch's.
    forged = buildkite.add_build(
        HEAD, {SMOKE.step_key: "scheduled"}, meta_data={"prbot_dispatch": claimed.dispatch_key}
    )
    outcome = run(engine, buildkite, tmp_path)
    assert outcome.resumed == 1
    # The smoke build was found by its key; only the benchmark's one build is new.
    assert buildkite.count_calls("POST", "/builds") == 2
    assert all(r.build_id for r in records(engine).values())
    bound = records(engine)[(SMOKE.name, "head")]
    assert bound.build_id == buildkite.builds[1].id != buildkite.builds[forged].id


def test_a_moved_head_dispatches_nothing(engine, buildkite, tmp_path) -> None:
    outcome = run(engine, buildkite, tmp_path, head_now="c" * 40)
    assert outcome.head_moved == "c" * 40 and buildkite.count_calls("POST", "/builds") == 0
    assert records(engine) == {}


def test_a_refusal_is_stored_and_an_outage_retried(engine, buildkite, tmp_path) -> None:
    class Refusing:
        name = "buildkite"

        def __init__(self, transient: bool) -> None:
            self.transient = transient

        def create_build(self, request):
            raise EngineError("Buildkite answered 503: down", transient=self.transient)

        def find_build(self, key, commit, *, repo, pr=None):
            return None

    with pytest.raises(EngineError):
        run(engine, buildkite, tmp_path, engines=lambda name: Refusing(True))
    assert all(r.claimed_without_build for r in records(engine).values())
    # The retry finds the claims and creates each build once.
    run(engine, buildkite, tmp_path)
    assert buildkite.count_calls("POST", "/builds") == 2
    # A recheck of failed jobs that the engine refuses: stored with the one-line reason.
    for record in records(engine).values():
        store.update_result(engine, record, state="failed")
    outcome = run(engine, buildkite, tmp_path, mode="recheck", engines=lambda n: Refusing(False))
    assert len(outcome.refused) == 2
    assert {r.error for r in records(engine).values()} == {"Buildkite answered 503: down"}


def test_untrusted_heads_are_recorded_as_awaiting_and_nothing_is_sent(
    engine, buildkite, tmp_path
) -> None:
    untrusted = Head("acme/widgets", 7, HEAD, BASE, trusted=False)
    run(engine, buildkite, tmp_path, head=untrusted, mode="recheck")
    assert {r.state for r in records(engine).values()} == {"awaiting_approval"}
    assert buildkite.count_calls("POST", "/builds") == 0


def test_no_secret_reaches_a_build(engine, buildkite, tmp_path, monkeypatch) -> None:
    secrets = {
        "PRBOT_WEBHOOK_SECRET": "whsec-1234567890abcdef",
        "PRBOT_PRIVATE_KEY_PATH": "/secret/key.pem",
        "PRBOT_BUILDKITE_TOKEN": "bk-api",
        "PRBOT_BUILDKITE_WEBHOOK_TOKEN": "bkwh-abcdef0123456789",
        "PRBOT_DATABASE_URL": "postgresql://user:pw@db/prbot",
        "GITHUB_TOKEN": "ghs_token_value",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    run(engine, buildkite, tmp_path)
    sent = json.dumps(buildkite.creates())
    for value in [*secrets.values(), "bk-api"]:
        assert value not in sent
    for body in buildkite.creates():
        assert set(body["env"]) <= {
            "VLLM_CI_ONLY_STEP_KEYS",
            "PRBOT_BENCHMARK_RUNS",
            "PRBOT_BENCHMARK_CONFIG",
            "PRBOT_BENCHMARK_BACKENDS",
            "PRBOT_BENCHMARK_COMPARE",
            "PRBOT_BENCHMARK_BASE_COMMIT",
            "PRBOT_BENCHMARK_AGAINST",
        }
        assert set(body["meta_data"]) == {"prbot_dispatch"}
    assert os.environ["GITHUB_TOKEN"] == "ghs_token_value"
    with pytest.raises(ValueError, match="may not carry"):
        BuildRequest("a/b", 1, HEAD, "x", "main", "m", (), env={"GITHUB_TOKEN": "t"})
