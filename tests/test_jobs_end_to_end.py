"""GPU jobs end to end over real HTTP: the local GitHub server, prbot's intake and worker, and
the local Buildkite sending signed webhooks. The model case is an SM100-only MLA backend."""

from __future__ import annotations

import json
import random

import pytest

from bot.cli.demo_stack import DEMO_GPU, INSTALLATION_ID, LocalStack, wait_for
from bot.report.render import MARKER
from bot.store import jobs as jobs_store
from bot.testing.buildkite_shapes import history

REPO = "acme/vllm-lite"
STEPS = """
group: Attention
steps:
- label: "(H100) V1 Attention"
  key: v1-attention-h100
  device: h100
  source_file_dependencies: [vllm/v1/attention]
- label: "(B200) V1 Attention"
  key: v1-attention-b200
  device: b200
  source_file_dependencies: [vllm/v1/attention]
- label: "prbot attention benchmark (B200)"
  key: prbot-attention-benchmark-b200
  device: b200
  source_file_dependencies: []
"""
REGISTRY = (
    "from enum import Enum\n\n\nclass AttentionBackendEnum(Enum):\n"
    '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
)
BACKEND = (
    "class FastMLABackend:\n    @classmethod\n"
    "    def supports_compute_capability(cls, capability) -> bool:\n"
    "        return capability.major == 10\n"
)
CHANGE = {
    "vllm/v1/attention/backends/registry.py": REGISTRY
    + '    FAST_MLA = "vllm.v1.attention.backends.mla.fast_mla.FastMLABackend"\n',
    "vllm/v1/attention/backends/mla/fast_mla.py": BACKEND,
}
# The platform's priority list at SM100: FLASHMLA is picked ahead of the new FAST_MLA.
PRIORITIES = """
def _get_backend_priorities(use_mla, device_capability):
    if use_mla:
        if device_capability.major == 10:
            return [AttentionBackendEnum.FLASHMLA, AttentionBackendEnum.FAST_MLA]
    return [AttentionBackendEnum.FLASH_ATTN]
"""
RULES = "extends: vllm\nfeatures:\n  dispatch: true\nchecks:\n  requirements:\n    enabled: false\n"
SMOKE, BENCH = "v1-attention-b200", "prbot-attention-benchmark-b200"


@pytest.fixture
def stack(tmp_path):
    with LocalStack(tmp_path / "stack", default_rules="vllm", buildkite=True) as running:
        running.github.create_repo(
            REPO,
            installation_id=INSTALLATION_ID,
            files={
                ".buildkite/test_areas/attention.yaml": STEPS,
                "vllm/__init__.py": "",
                "vllm/v1/attention/backends/registry.py": REGISTRY,
                "vllm/platforms/cuda.py": PRIORITIES,
                ".github/prbot.yml": RULES,
            },
        )
        running.github.set_permission(REPO, "maintainer", "write")
        yield running


def open_pr(stack, association: str, change: dict[str, str] = CHANGE) -> int:
    stack.github.commit(REPO, "fast-mla", change, "add FAST_MLA")
    pull = stack.github.open_pull_request(
        REPO,
        head_branch="fast-mla",
        title="[Attention] FAST_MLA",
        author="contributor",
        author_association=association,
    )
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, pull["number"], "opened"))
    return pull["number"]


def comment(stack, number: int) -> str:
    found = [c for c in stack.github.comments(REPO, number) if MARKER in c["body"]]
    return found[0]["body"] if found else ""


def results(mean: float, seed: int, backend: str = "FAST_MLA") -> bytes:
    rng = random.Random(seed)
    return json.dumps(
        [
            {
                "config": {"backend": backend, "batch_spec": spec},
                "mean_time": mean * rng.lognormvariate(0, 0.01),
                "std_time": 0.0,
                "error": None,
            }
            for spec in ("16q1s1k", "64q1s4k")
        ]
    ).encode()


def paired_files(head_mean: float, base_mean: float, rounds: int = 5) -> dict[str, bytes]:
    """A prbot bench run job's artifacts: both sides, one file per round, the GPU."""
    files = {f"{side}/machine.csv": DEMO_GPU.encode() for side in ("base", "head")}
    for n in range(1, rounds + 1):
        files[f"bench/base/run-{n}.json"] = results(base_mean, 100 + n, "FLASHMLA")
        files[f"bench/head/run-{n}.json"] = results(head_mean, n)
    return files


def builds_for(bk, keys: list[str]) -> list:
    return [
        b for b in bk.builds.values() if json.loads(b.body["env"]["VLLM_CI_ONLY_STEP_KEYS"]) == keys
    ]


def test_a_trusted_sm100_pr_runs_b200_smoke_and_a_benchmark_into_the_comment(stack) -> None:
    bk = stack.buildkite
    number = open_pr(stack, "MEMBER")
    wait_for(lambda: len(bk.builds) == 2, what="two builds")
    wait_for(stack.idle, what="idle")
    (smoke,) = builds_for(bk, [SMOKE])
    (head_bench,) = builds_for(bk, [BENCH])  # one job: base and head alternately on one GPU
    assert head_bench.body["branch"] == "fast-mla"
    # FAST_MLA is new in the PR: it is timed against the incumbents on the same head.
    assert head_bench.body["env"]["PRBOT_BENCHMARK_COMPARE"] == "backends"
    assert "PRBOT_BENCHMARK_BASE_COMMIT" not in head_bench.body["env"]
    assert head_bench.body["env"]["PRBOT_BENCHMARK_BACKENDS"] == "FAST_MLA"
    assert head_bench.body["env"]["PRBOT_BENCHMARK_AGAINST"] == "FLASHMLA"
    assert "mla_decode.yaml" in head_bench.body["env"]["PRBOT_BENCHMARK_CONFIG"]
    body = comment(stack, number)
    assert "🕒 queued" in body and "`b200`" in body and "h100" not in body.split("Hardware")[0]
    head = smoke.body["commit"]
    runs = stack.github.check_runs(REPO, head)
    assert len(runs) == 1 and runs[0]["status"] == "in_progress"

    bk.finish_job(smoke.number, SMOKE, "passed")
    bk.finish_job(head_bench.number, BENCH, "passed", artifacts=paired_files(1.10e-3, 1.0e-3))
    wait_for(lambda: "❌ regression" in comment(stack, number), what="the ratio table")
    wait_for(stack.idle, what="idle")
    body = comment(stack, number)
    assert "✅ passed" in body and "```mermaid" not in body  # two rows: a chart adds nothing
    assert "head (FAST\\_MLA) against base (FLASHMLA) on NVIDIA H200 GPU-3f81f7ad" in body
    assert "| 16q1s1k |" in body
    runs = stack.github.check_runs(REPO, head)
    assert len(runs) == 1 and runs[0]["status"] == "completed"

    # A replayed webhook changes nothing and creates nothing.
    creates = bk.count_calls("POST", "/builds")
    edits_before = len(stack.github.comments(REPO, number))
    payload = {"event": "job.finished", "build": {"id": smoke.id, "number": smoke.number}}
    assert bk.deliver("job.finished", payload) in (200, 202)
    wait_for(stack.idle, what="idle")
    assert bk.count_calls("POST", "/builds") == creates == 2
    assert len(stack.github.comments(REPO, number)) == edits_before

    # /recheck with nothing failed creates no build.
    note = stack.github.add_user_comment(REPO, number, "maintainer", "/recheck")
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, note))
    wait_for(lambda: "rocket" in stack.github.reactions(REPO, note["id"]), what="recheck ran")
    wait_for(stack.idle, what="idle")
    assert bk.count_calls("POST", "/builds") == 2
    assert "✅ passed" in comment(stack, number)


def test_a_new_backend_with_no_incumbent_is_not_benchmarked_and_the_comment_says_why(
    stack,
) -> None:
    # The PR puts FAST_MLA first in the priority list: nothing today runs ahead of it, so a
    # benchmark job could only compare it with itself.
    first = PRIORITIES.replace(
        "[AttentionBackendEnum.FLASHMLA, AttentionBackendEnum.FAST_MLA]",
        "[AttentionBackendEnum.FAST_MLA]",
    )
    bk = stack.buildkite
    number = open_pr(stack, "MEMBER", {**CHANGE, "vllm/platforms/cuda.py": first})
    wait_for(lambda: len(bk.builds) == 1, what="the smoke build")
    wait_for(stack.idle, what="idle")
    (smoke,) = bk.builds.values()
    assert json.loads(smoke.body["env"]["VLLM_CI_ONLY_STEP_KEYS"]) == [SMOKE]
    assert bk.count_calls("POST", "/builds") == 1
    body = comment(stack, number)
    lines = [line for line in body.splitlines() if "is not dispatched" in line]
    assert len(lines) == 1 and "FAST\\_MLA is not at base" in lines[0]
    assert (
        "the branch for compute capability 10 (b200) in vllm/platforms/cuda.py::"
        "_get_backend_priorities lists no other backend this job measures, so there is "
        "nothing to benchmark it against"
    ) in lines[0].replace("\\_", "_")


def test_an_untrusted_pr_waits_for_an_approval_of_its_head(stack) -> None:
    bk = stack.buildkite
    number = open_pr(stack, "CONTRIBUTOR")
    wait_for(lambda: "awaiting approval" in comment(stack, number), what="awaiting")
    # Nothing the author does dispatches: /recheck, a quoted approval, an approval in code.
    for text in ("/recheck", "> /approve-gpu", "```\n/approve-gpu\n```", "/approve-gpu"):
        note = stack.github.add_user_comment(REPO, number, "contributor", text)
        stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, note))
    quoted = stack.github.add_user_comment(REPO, number, "maintainer", "> /approve-gpu")
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, quoted))
    wait_for(stack.idle, what="idle")
    assert bk.count_calls("POST", "/builds") == 0

    approval = stack.github.add_user_comment(REPO, number, "maintainer", "/approve-gpu")
    # An edited comment never approves; this one is delivered as an edit first.
    edited = stack.github.issue_comment_event(REPO, number, approval, action="edited")
    stack.deliver("issue_comment", edited)
    wait_for(stack.idle, what="idle")
    assert bk.count_calls("POST", "/builds") == 0
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, approval))
    wait_for(lambda: len(bk.builds) == 2, what="builds after the approval")
    wait_for(stack.idle, what="idle")
    approved_head = next(iter(bk.builds.values())).body["commit"]
    # The same approval delivered again changes nothing.
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, approval))
    wait_for(stack.idle, what="idle")
    assert len(bk.builds) == 2

    # A push makes a head nobody approved.
    new_head = stack.github.push(
        REPO, number, {"vllm/v1/attention/backends/mla/fast_mla.py": BACKEND + "# v2\n"}
    )
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "synchronize"))
    wait_for(lambda: f"prbot:head={new_head}" in comment(stack, number), what="new report")
    wait_for(stack.idle, what="idle")
    assert "awaiting approval" in comment(stack, number) and len(bk.builds) == 2
    assert new_head != approved_head


def test_approvals_by_label_and_of_the_head_the_approver_saw(stack) -> None:
    bk = stack.buildkite
    number = open_pr(stack, "CONTRIBUTOR")
    wait_for(lambda: "awaiting approval" in comment(stack, number), what="awaiting")

    def labeled(by: str, label: str = "ready") -> dict:
        payload = stack.github.pull_request_event(REPO, number, "labeled", label=label)
        payload["sender"] = {**payload["sender"], "login": by}
        return payload

    old_label = labeled("maintainer")
    # The author pushes while the maintainer writes: the comment predates the new head's
    # report, so it approves nothing; the label added on the old head neither.
    new_head = stack.github.push(REPO, number, {"vllm/v1/attention/backends/mla/x.py": "y = 1\n"})
    approval = stack.github.add_user_comment(REPO, number, "maintainer", "/approve-gpu")
    event = stack.github.issue_comment_event(REPO, number, approval)
    event["comment"]["created_at"] = "2020-01-01T00:00:00Z"
    stack.deliver("issue_comment", event)
    stack.deliver("pull_request", old_label)
    wait_for(stack.idle, what="idle")
    replies = [c["body"] for c in stack.github.comments(REPO, number) if "head moved" in c["body"]]
    assert len(replies) == 1 and new_head[:12] in replies[0]
    assert bk.count_calls("POST", "/builds") == 0
    # The label handler itself approves nothing for a head that moved (the dispatcher's own
    # moved-head check would also stop a build; each guard must hold alone).
    old_head = old_label["pull_request"]["head"]["sha"]
    assert old_head != new_head
    assert jobs_store.approvers(stack.service.engine, REPO, number, old_head) == []

    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "synchronize"))
    wait_for(lambda: f"prbot:head={new_head}" in comment(stack, number), what="new report")
    for payload in (labeled("contributor"), labeled("maintainer", label="documentation")):
        stack.deliver("pull_request", payload)  # the author's own label; not an approval label
    wait_for(stack.idle, what="idle")
    assert bk.count_calls("POST", "/builds") == 0
    stack.deliver("pull_request", labeled("maintainer"))
    wait_for(lambda: len(bk.builds) == 2, what="builds after the label")
    assert {b.body["commit"] for b in bk.builds.values()} >= {new_head}
    body = wait_for(lambda: "🕒 queued" in comment(stack, number) and comment(stack, number))
    assert "awaiting approval" not in body.split("Details: GPU jobs")[1]


def finish_benchmarks(bk) -> None:
    for build in builds_for(bk, [BENCH]):
        bk.finish_job(build.number, BENCH, "passed", artifacts=paired_files(1.0e-3, 1.0e-3))


def test_a_failure_main_never_has_is_retried_once_then_new_and_fails_the_check(stack) -> None:
    bk = stack.buildkite
    bk.seed_history(history({SMOKE: "P" * 10}, newest=900))
    number = open_pr(stack, "MEMBER")
    wait_for(lambda: len(bk.builds) == 2, what="two builds")
    wait_for(stack.idle, what="idle")
    (smoke,) = builds_for(bk, [SMOKE])
    bk.finish_job(smoke.number, SMOKE, "failed")
    wait_for(lambda: bk.count_calls("PUT", "/retry") == 1, what="the retry")
    wait_for(stack.idle, what="idle")
    assert "🏃 running" in comment(stack, number) or "🕒 queued" in comment(stack, number)
    bk.finish_job(smoke.number, SMOKE, "failed")  # the retry fails too
    finish_benchmarks(bk)
    wait_for(lambda: "New failures (1)" in comment(stack, number), what="the new failure")
    wait_for(stack.idle, what="idle")
    body = comment(stack, number)
    assert "[same step on main](" in body and "failed again on a retry" in body
    assert bk.count_calls("PUT", "/retry") == 1
    (run,) = stack.github.check_runs(REPO, smoke.body["commit"])
    assert (run["status"], run["conclusion"]) == ("completed", "failure")


def test_a_failure_that_is_flaky_on_main_is_not_retried_and_does_not_fail_the_check(stack) -> None:
    bk = stack.buildkite
    bk.seed_history(history({SMOKE: "PPFPPPFPPP"}, newest=900))
    number = open_pr(stack, "MEMBER")
    wait_for(lambda: len(bk.builds) == 2, what="two builds")
    wait_for(stack.idle, what="idle")
    (smoke,) = builds_for(bk, [SMOKE])
    bk.finish_job(smoke.number, SMOKE, "failed")
    finish_benchmarks(bk)
    wait_for(lambda: "Flaky (1)" in comment(stack, number), what="the flaky failure")
    wait_for(stack.idle, what="idle")
    assert bk.count_calls("PUT", "/retry") == 0
    (run,) = stack.github.check_runs(REPO, smoke.body["commit"])
    assert run["status"] == "completed" and run["conclusion"] != "failure"
