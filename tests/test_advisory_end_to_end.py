"""prbot beside the repository's own CI, end to end with vLLM's rules over real HTTP (the local
GitHub and Buildkite): advisory by default, the repository's own builds of a head reported as
such, no second build of a step they ran, and no answer to vLLM's own commands."""

from __future__ import annotations

import json

import pytest

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.report.render import MARKER
from bot.store.queue import Queue

REPO = "acme/vllm-lite"
STEPS = """
group: Attention
steps:
- label: "(B200) V1 Attention"
  key: v1-attention-b200
  device: b200
  parallelism: 2
  source_file_dependencies: [vllm/v1/attention]
- label: "(B200) Attention benchmarks smoke"
  key: attention-benchmarks-smoke-b200
  device: b200
  source_file_dependencies: [vllm/v1/attention]
"""
REGISTRY = (
    "from enum import Enum\n\n\nclass AttentionBackendEnum(Enum):\n"
    '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
)
CHANGE = {
    "vllm/v1/attention/backends/flash_attn.py": (
        "class FlashAttentionBackend:\n    @classmethod\n"
        "    def supports_compute_capability(cls, capability) -> bool:\n"
        "        return capability.major == 10\n"
    ),
}
ADVISORY = "extends: vllm\nchecks:\n  requirements:\n    enabled: false\n"
DISPATCH = ADVISORY + "features:\n  dispatch: true\n"
SMOKE, OTHER = "v1-attention-b200", "attention-benchmarks-smoke-b200"


def make_stack(tmp_path, rules: str):
    stack = LocalStack(tmp_path / "stack", default_rules="vllm", buildkite=True)
    running = stack.__enter__()
    running.github.create_repo(
        REPO,
        installation_id=INSTALLATION_ID,
        files={
            ".buildkite/test_areas/attention.yaml": STEPS,
            "vllm/__init__.py": "",
            "vllm/v1/attention/backends/registry.py": REGISTRY,
            ".github/prbot.yml": rules,
        },
    )
    running.github.set_permission(REPO, "maintainer", "write")
    running.github.repos[REPO].required_reviews = 1  # vLLM's main asks for a review
    return stack, running


@pytest.fixture
def advisory(tmp_path):
    stack, running = make_stack(tmp_path, ADVISORY)
    yield running
    stack.__exit__(None, None, None)


@pytest.fixture
def dispatching(tmp_path):
    stack, running = make_stack(tmp_path, DISPATCH)
    yield running
    stack.__exit__(None, None, None)


def open_pr(stack, association: str = "MEMBER", before=None) -> tuple[int, str]:
    head = stack.github.commit(REPO, "flash", CHANGE, "FA on SM100")
    if before is not None:
        before(head)  # the repository's own CI builds the push first
    pull = stack.github.open_pull_request(
        REPO, head_branch="flash", title="FA", author="contributor", author_association=association
    )
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, pull["number"], "opened"))
    return pull["number"], head


def comment(stack, number: int) -> str:
    found = [c for c in stack.github.comments(REPO, number) if MARKER in c["body"]]
    return found[0]["body"] if found else ""


def prbot_builds(bk) -> list:
    return [b for b in bk.builds.values() if (b.body.get("meta_data") or {}).get("prbot_dispatch")]


def test_advisory_reports_the_repositorys_own_build_and_dispatches_nothing(advisory) -> None:
    bk = advisory.buildkite
    own: list[int] = []
    number, _ = open_pr(
        advisory,
        before=lambda head: own.append(
            bk.add_build(head, {SMOKE: "passed", "pre-commit": "passed"}, branch="flash")
        ),
    )
    wait_for(lambda: "repository's build" in comment(advisory, number), what="the states")
    wait_for(advisory.idle, what="idle")
    body = comment(advisory, number)
    assert f"repository's build #{own[0]}: [✅ passed]" in body
    assert "the repository's own builds of this head: 1 passed" in body
    assert "1 smoke step in no build yet" in body
    assert "advisory: prbot dispatches nothing here" in body
    assert "awaiting" not in body
    assert bk.count_calls("POST", "/builds") == 0 and prbot_builds(bk) == []


def test_a_build_whose_meta_data_claims_prbot_is_still_the_repositorys(advisory) -> None:
    bk = advisory.buildkite
    # The PR's code, run by the repository's own CI, set prbot's meta-data field on its build
    # (`buildkite-agent meta-data set prbot_dispatch ...`) to hide its failed smoke step from
    # the report. Only a build recorded in prbot's job store is prbot's.
    own: list[int] = []
    number, _ = open_pr(
        advisory,
        before=lambda head: own.append(
            bk.add_build(
                head,
                {SMOKE: "failed"},
                branch="flash",
                meta_data={"prbot_dispatch": "prbot-" + "0" * 32},
            )
        ),
    )
    # (Before the fix this build was left out, and the states never came.)
    wait_for(lambda: "repository's build" in comment(advisory, number), what="the states")
    wait_for(advisory.idle, what="idle")
    body = comment(advisory, number)
    [line] = [ln for ln in body.splitlines() if f"repository's build #{own[0]}" in ln]
    assert "failed" in line


def test_a_maintainers_ci_run_is_vllms_and_makes_no_prbot_build(dispatching) -> None:
    number, _ = open_pr(dispatching, association="CONTRIBUTOR")
    wait_for(lambda: "awaiting" in comment(dispatching, number), what="the report")
    wait_for(dispatching.idle, what="idle")

    def bots() -> int:
        return sum(c["user"]["type"] == "Bot" for c in dispatching.github.comments(REPO, number))

    replies_before = bots()
    for body in ("/ci run", "/amd-ci run", "/ci cancel"):
        note = dispatching.github.add_user_comment(REPO, number, "maintainer", body)
        event = dispatching.github.issue_comment_event(REPO, number, note)
        dispatching.deliver("issue_comment", event)
    wait_for(dispatching.idle, what="idle")
    assert dispatching.buildkite.count_calls("POST", "/builds") == 0
    assert bots() == replies_before == 1  # the report alone


def test_dispatch_sends_only_the_step_no_build_of_the_head_ran(dispatching) -> None:
    bk = dispatching.buildkite
    number, head = open_pr(
        dispatching, before=lambda head: bk.add_build(head, {SMOKE: "running"}, branch="flash")
    )
    wait_for(lambda: len(prbot_builds(bk)) == 1, what="prbot's build")
    wait_for(dispatching.idle, what="idle")
    (mine,) = prbot_builds(bk)
    assert json.loads(mine.body["env"]["VLLM_CI_ONLY_STEP_KEYS"]) == [OTHER]
    assert mine.body["commit"] == head
    body = comment(dispatching, number)
    assert "repository's build #1: [🏃 running]" in body
    # Another event for the head (a /recheck) builds neither step again.
    note = dispatching.github.add_user_comment(REPO, number, "maintainer", "/recheck")
    dispatching.deliver("issue_comment", dispatching.github.issue_comment_event(REPO, number, note))
    wait_for(lambda: "rocket" in dispatching.github.reactions(REPO, note["id"]), what="recheck")
    wait_for(dispatching.idle, what="idle")
    assert len(prbot_builds(bk)) == 1


@pytest.mark.parametrize("status", [401, 404, 500])
def test_a_buildkite_api_that_refuses_is_one_line_in_the_jobs_section(advisory, status) -> None:
    advisory.buildkite.list_status = status
    number, _ = open_pr(advisory)
    wait_for(lambda: "were not read" in comment(advisory, number), what="the note")
    wait_for(advisory.idle, what="idle")
    body = comment(advisory, number)
    [line] = [ln for ln in body.splitlines() if "were not read" in ln]
    assert f"Buildkite answered {status}" in line
    assert "GPU jobs" in body and "changed_files" not in body.split(MARKER)[0]


def test_ten_thousand_builds_of_a_head_are_read_to_the_bound(advisory) -> None:
    bk = advisory.buildkite

    def flood(head: str) -> None:
        for _ in range(10_000):
            bk.add_build(head, {"pre-commit": "passed"}, branch="flash")

    number, _ = open_pr(advisory, before=flood)
    wait_for(lambda: "newest 300 were read" in comment(advisory, number), what="the note")
    wait_for(advisory.idle, what="idle")
    assert bk.count_calls("GET", "/builds") == 3


def author_approves(stack, number: int) -> None:
    note = stack.github.add_user_comment(REPO, number, "contributor", "/approve-gpu")
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, note))
    wait_for(stack.idle, what="idle")


def bot_replies(stack, number: int) -> list[str]:
    return [
        c["body"]
        for c in stack.github.comments(REPO, number)
        if c["user"]["type"] == "Bot" and MARKER not in c["body"]
    ]


def test_an_author_starts_the_jobs_the_vllm_way(dispatching) -> None:
    bk, gh = dispatching.buildkite, dispatching.github
    number, head = open_pr(dispatching, association="CONTRIBUTOR")
    wait_for(lambda: "awaiting" in comment(dispatching, number), what="the report")
    wait_for(dispatching.idle, what="idle")
    # Alone: refused, saying what vLLM's rule asks for.
    author_approves(dispatching, number)
    [refused] = bot_replies(dispatching, number)
    assert "a reviewer with write access must approve the PR or add the `ready` label" in refused
    assert "`/approve-gpu` approved nothing" in refused and prbot_builds(bk) == []
    # A draft: refused whatever else holds.
    gh.edit_pull_request(REPO, number, draft=True)
    gh.add_review(REPO, number, "maintainer", "APPROVED")
    author_approves(dispatching, number)
    assert "while the PR is a draft" in bot_replies(dispatching, number)[-1]
    assert prbot_builds(bk) == []
    # A maintainer's approving review delegates to the author: the author's command approves
    # the head, and the selected steps are dispatched.
    gh.edit_pull_request(REPO, number, draft=False)
    author_approves(dispatching, number)
    wait_for(lambda: len(prbot_builds(bk)) == 1, what="prbot's build")
    assert {b.body["commit"] for b in prbot_builds(bk)} == {head}


def test_the_ready_label_delegates_to_the_author(dispatching) -> None:
    number, head = open_pr(dispatching, association="CONTRIBUTOR")
    wait_for(lambda: "awaiting" in comment(dispatching, number), what="the report")
    wait_for(dispatching.idle, what="idle")
    dispatching.github.add_label(REPO, number, "ready")  # on the PR; no labeled event sent
    author_approves(dispatching, number)
    wait_for(lambda: len(prbot_builds(dispatching.buildkite)) == 1, what="prbot's build")
    assert bot_replies(dispatching, number) == []


def test_an_approval_of_an_earlier_commit_delegates_nothing(dispatching) -> None:
    gh = dispatching.github
    number, _ = open_pr(dispatching, association="CONTRIBUTOR")
    wait_for(lambda: "awaiting" in comment(dispatching, number), what="the report")
    wait_for(dispatching.idle, what="idle")
    gh.add_review(REPO, number, "maintainer", "APPROVED")
    # The author pushes after the approval: GitHub still says APPROVED (stale reviews are not
    # dismissed here), but the review saw other code.
    head = gh.push(REPO, number, {"vllm/v1/attention/backends/extra.py": "X = 1\n"})
    dispatching.deliver("pull_request", gh.pull_request_event(REPO, number, "synchronize"))
    wait_for(lambda: head[:12] in comment(dispatching, number), what="the new report")
    wait_for(dispatching.idle, what="idle")
    author_approves(dispatching, number)
    refused = bot_replies(dispatching, number)[-1]
    assert f"the approval is of an earlier commit, not of `{head[:12]}`" in refused
    assert prbot_builds(dispatching.buildkite) == []
    # A new approval of this head delegates.
    gh.add_review(REPO, number, "maintainer", "APPROVED")
    author_approves(dispatching, number)
    wait_for(lambda: len(prbot_builds(dispatching.buildkite)) == 1, what="prbot's build")
    assert {b.body["commit"] for b in prbot_builds(dispatching.buildkite)} == {head}


def test_a_review_decision_short_of_approved_delegates_nothing(dispatching) -> None:
    # The branch asks for two approvals; one writer's approval of the head is not GitHub's
    # APPROVED, and vLLM's rule (reviewDecision first) refuses.
    gh = dispatching.github
    gh.repos[REPO].required_reviews = 2
    number, _ = open_pr(dispatching, association="CONTRIBUTOR")
    wait_for(lambda: "awaiting" in comment(dispatching, number), what="the report")
    wait_for(dispatching.idle, what="idle")
    gh.add_review(REPO, number, "maintainer", "APPROVED")
    author_approves(dispatching, number)
    assert "must approve the PR" in bot_replies(dispatching, number)[-1]
    assert prbot_builds(dispatching.buildkite) == []
    gh.set_permission(REPO, "second", "maintain")
    gh.add_review(REPO, number, "second", "APPROVED")
    author_approves(dispatching, number)
    wait_for(lambda: len(prbot_builds(dispatching.buildkite)) == 1, what="prbot's build")


def test_a_review_decision_github_will_not_give_is_said(dispatching) -> None:
    gh = dispatching.github
    number, _ = open_pr(dispatching, association="CONTRIBUTOR")
    wait_for(lambda: "awaiting" in comment(dispatching, number), what="the report")
    wait_for(dispatching.idle, what="idle")
    gh.add_review(REPO, number, "maintainer", "APPROVED")
    gh.inject("POST", r"/graphql", status=403)
    author_approves(dispatching, number)
    assert "did not answer with the PR's reviewDecision" in bot_replies(dispatching, number)[-1]
    assert prbot_builds(dispatching.buildkite) == []


def test_a_readers_review_delegates_nothing(dispatching) -> None:
    gh = dispatching.github
    number, _ = open_pr(dispatching, association="CONTRIBUTOR")
    wait_for(lambda: "awaiting" in comment(dispatching, number), what="the report")
    wait_for(dispatching.idle, what="idle")
    gh.set_permission(REPO, "bystander", "read")
    gh.add_review(REPO, number, "bystander", "APPROVED")
    gh.add_review(REPO, number, "contributor", "APPROVED")
    author_approves(dispatching, number)
    assert "must approve the PR" in bot_replies(dispatching, number)[-1]
    assert prbot_builds(dispatching.buildkite) == []


# GitHub's reviewDecision not asked: prbot's own reading of the reviews is all there is.
OWN_REVIEWS = (
    "extends: vllm\nchecks:\n  requirements:\n    enabled: false\n  jobs:\n    approval:\n"
    "      review_decision: false\nfeatures:\n  dispatch: true\n"
)


@pytest.mark.parametrize("hide_with", ["own_reviews", "reviewers"])
def test_a_request_for_changes_is_not_hidden_behind_other_reviews(tmp_path, hide_with) -> None:
    # A writer approved the head, then another asked for changes. The author buries that
    # request past what prbot reads: 300 commented reviews of their own PR, or ten readers'
    # approvals listed before it. Either way the author's command approves nothing.
    stack, running = make_stack(tmp_path, OWN_REVIEWS)
    try:
        gh = running.github
        number, _ = open_pr(running, association="CONTRIBUTOR")
        wait_for(lambda: "awaiting" in comment(running, number), what="the report")
        wait_for(running.idle, what="idle")
        gh.add_review(REPO, number, "maintainer", "APPROVED")
        if hide_with == "own_reviews":
            for _ in range(300):
                gh.add_review(REPO, number, "contributor", "COMMENTED")
        else:
            for n in range(10):
                gh.set_permission(REPO, f"reader{n}", "read")
                gh.add_review(REPO, number, f"reader{n}", "APPROVED")
        gh.set_permission(REPO, "second", "write")
        gh.add_review(REPO, number, "second", "CHANGES_REQUESTED")
        author_approves(running, number)
        refused = bot_replies(running, number)[-1]
        assert "approved nothing" in refused
        if hide_with == "own_reviews":
            assert "over 300 reviews" in refused
        assert prbot_builds(running.buildkite) == []
    finally:
        stack.__exit__(None, None, None)


def test_a_feature_without_its_permission_is_one_line_and_the_rest_comes_out(tmp_path) -> None:
    stack, running = make_stack(tmp_path, ADVISORY + "features:\n  autofix: true\n")
    try:
        granted = {"metadata": "read", "contents": "read", "pull_requests": "read"}
        running.github.installations[INSTALLATION_ID].permissions = {
            **granted,
            "issues": "write",
            "checks": "write",
        }
        number, _ = open_pr(running)
        wait_for(lambda: "GPU jobs" in comment(running, number), what="the report")
        wait_for(running.idle, what="idle")
        body = comment(running, number)
        [line] = [ln for ln in body.splitlines() if "features.autofix is on" in ln]
        assert "not granted contents: write: GitHub refuses the fix push" in line
        assert "Changed files" in body  # the other sections still came out
    finally:
        stack.__exit__(None, None, None)


def test_a_permission_accepted_later_is_read_from_the_installation(tmp_path) -> None:
    # The token minted for the first report keeps the permissions it was minted with; what the
    # owner accepts afterwards is on the installation (GET /app/installations/{id}).
    stack, running = make_stack(tmp_path, ADVISORY + "features:\n  autofix: true\n")
    try:
        installation = running.github.installations[INSTALLATION_ID]
        narrow = {"metadata": "read", "contents": "read", "issues": "write", "checks": "write"}
        installation.permissions = {**narrow, "pull_requests": "read"}
        number, _ = open_pr(running)
        wait_for(lambda: "features.autofix is on" in comment(running, number), what="the line")
        wait_for(running.idle, what="idle")
        installation.permissions = {**narrow, "pull_requests": "read", "contents": "write"}
        accepted = running.github.installation_event(INSTALLATION_ID, "new_permissions_accepted")
        running.deliver("installation", accepted)
        note = running.github.add_user_comment(REPO, number, "maintainer", "/recheck")
        running.deliver("issue_comment", running.github.issue_comment_event(REPO, number, note))
        wait_for(lambda: "rocket" in running.github.reactions(REPO, note["id"]), what="recheck")
        wait_for(running.idle, what="idle")
        body = comment(running, number)
        assert "GPU jobs" in body and "features.autofix is on" not in body
    finally:
        stack.__exit__(None, None, None)


def test_without_the_benchmark_step_the_section_names_the_file_and_reads_the_builds(
    advisory,
) -> None:
    # A new MLA backend selects the MLA decode benchmark, whose step this pipeline lacks.
    bk, gh = advisory.buildkite, advisory.github
    backend = CHANGE["vllm/v1/attention/backends/flash_attn.py"].replace(
        "FlashAttention", "FastMLA"
    )
    change = {
        "vllm/v1/attention/backends/registry.py": REGISTRY
        + '    FAST_MLA = "vllm.v1.attention.backends.mla.fast_mla.FastMLABackend"\n',
        "vllm/v1/attention/backends/mla/fast_mla.py": backend,
    }
    head = gh.commit(REPO, "fast-mla", change, "add FAST_MLA")
    own = bk.add_build(head, {SMOKE: "failed"}, branch="fast-mla")
    pull = gh.open_pull_request(
        REPO, head_branch="fast-mla", title="FAST_MLA", author="contributor"
    )
    gh_event = gh.pull_request_event(REPO, pull["number"], "opened")
    advisory.deliver("pull_request", gh_event)
    number = pull["number"]
    wait_for(lambda: "repository's build" in comment(advisory, number), what="the states")
    wait_for(advisory.idle, what="idle")
    body = comment(advisory, number)
    [line] = [ln for ln in body.splitlines() if "needs the step" in ln]
    assert "`deploy/gpu-bench/buildkite-step.yaml`" in line
    assert "`prbot-attention-benchmark-b200`" in line
    assert f"repository's build #{own}: [❌ failed]" in body
    assert bk.count_calls("POST", "/builds") == 0


def vllm_statuses(stack, head: str, states: dict[str, str]) -> None:
    """vLLM's Buildkite as GitHub shows it: one commit status per job, beside the build's."""
    stack.github.add_status(REPO, head, "buildkite/ci/pr", "pending")
    for key, state in states.items():
        url = f"https://buildkite.com/vllm/ci/builds/4242#{key}"
        stack.github.add_status(REPO, head, f"buildkite/ci/pr/{key}", state, target_url=url)


def test_vllms_commit_statuses_fill_in_the_smoke_steps(advisory) -> None:
    # The build is in a pipeline prbot's token does not read; its statuses are on GitHub.
    number, head = open_pr(
        advisory, before=lambda head: vllm_statuses(advisory, head, {SMOKE: "success"})
    )
    wait_for(lambda: "buildkite/ci/pr/" in comment(advisory, number), what="the states")
    wait_for(advisory.idle, what="idle")
    body = comment(advisory, number)
    url = f"https://buildkite.com/vllm/ci/builds/4242#{SMOKE}"
    assert f"repository's `buildkite/ci/pr/{SMOKE}`: [✅ passed]({url})" in body
    assert "the repository's own builds of this head: 1 passed" in body
    assert "1 smoke step in no build yet" in body
    assert advisory.buildkite.count_calls("POST", "/builds") == 0


def test_a_step_a_status_shows_running_is_not_dispatched_again(dispatching) -> None:
    bk = dispatching.buildkite
    number, head = open_pr(
        dispatching, before=lambda head: vllm_statuses(dispatching, head, {SMOKE: "pending"})
    )
    wait_for(lambda: len(prbot_builds(bk)) == 1, what="prbot's build")
    wait_for(dispatching.idle, what="idle")
    (mine,) = prbot_builds(bk)
    assert json.loads(mine.body["env"]["VLLM_CI_ONLY_STEP_KEYS"]) == [OTHER]
    assert f"repository's `buildkite/ci/pr/{SMOKE}`: [pending]" in comment(dispatching, number)


def test_a_status_posted_later_redraws_the_steps_without_a_dispatch(dispatching) -> None:
    bk, gh = dispatching.buildkite, dispatching.github
    number, head = open_pr(dispatching)
    wait_for(lambda: len(prbot_builds(bk)) == 1, what="prbot's build")
    wait_for(dispatching.idle, what="idle")
    calls = bk.count_calls("POST", "/builds")
    # vLLM's own build of the head starts later; its Buildkite posts the job's status.
    status = gh.add_status(
        REPO, head, f"buildkite/ci/pr/{SMOKE}", "failure", target_url="https://bk.example/j"
    )
    dispatching.deliver("status", gh.status_event(REPO, status))
    wait_for(lambda: "buildkite/ci/pr/" in comment(dispatching, number), what="the redraw")
    wait_for(dispatching.idle, what="idle")
    body = comment(dispatching, number)
    assert f"repository's `buildkite/ci/pr/{SMOKE}`: [❌ failed](https://bk.example/j)" in body
    assert bk.count_calls("POST", "/builds") == calls == 1


def test_another_apps_check_run_redraws_the_steps(tmp_path) -> None:
    # vLLM's rules count statuses only; a repository naming its CI app counts its runs.
    rules = ADVISORY + "  jobs:\n    repository_checks:\n      check_run_apps: [other-ci]\n"
    stack, advisory = make_stack(tmp_path, rules)
    try:
        _another_apps_check_run_redraws_the_steps(advisory)
    finally:
        stack.__exit__(None, None, None)


def _another_apps_check_run_redraws_the_steps(advisory) -> None:
    gh = advisory.github
    number, head = open_pr(advisory)
    wait_for(lambda: "GPU jobs" in comment(advisory, number), what="the report")
    wait_for(advisory.idle, what="idle")
    run_id = gh.add_foreign_check_run(
        REPO, head, f"buildkite/ci/pr/{OTHER}", status="in_progress", conclusion=None
    )
    advisory.deliver("check_run", gh.check_run_event(REPO, run_id, "created", sender="ci[bot]"))
    wait_for(lambda: "buildkite/ci/pr/" in comment(advisory, number), what="the redraw")
    wait_for(advisory.idle, what="idle")
    assert f"repository's `buildkite/ci/pr/{OTHER}`: [🏃 running]" in comment(advisory, number)


def test_buildkite_news_of_the_repositorys_own_build_redraws_the_steps(advisory) -> None:
    bk = advisory.buildkite
    number, head = open_pr(advisory)
    wait_for(lambda: "GPU jobs" in comment(advisory, number), what="the report")
    wait_for(advisory.idle, what="idle")
    own = bk.add_build(head, {SMOKE: "running"}, branch="flash")  # vLLM's /ci run, say
    bk.finish_job(own, SMOKE, "failed")  # its job.finished and build.finished webhooks
    wait_for(lambda: f"build #{own}" in comment(advisory, number), what="the redraw")
    wait_for(advisory.idle, what="idle")
    assert f"repository's build #{own}: [❌ failed]" in comment(advisory, number)
    assert bk.count_calls("POST", "/builds") == 0


@pytest.mark.parametrize("status", [401, 403, 404])
def test_github_refusing_the_checks_is_one_line_in_the_jobs_section(advisory, status) -> None:
    # 401 and 403 as GitHub answers a token without checks/statuses read; 404, a head gone.
    advisory.github.inject("GET", r".*/commits/[0-9a-f]+/(check-runs|status)$", status=status)
    number, _ = open_pr(advisory)
    wait_for(
        lambda: "statuses of this head were not read" in comment(advisory, number), what="note"
    )
    wait_for(advisory.idle, what="idle")
    body = comment(advisory, number)
    [line] = [ln for ln in body.splitlines() if "statuses of this head were not read" in ln]
    assert f"GitHub answered {status}" in line
    assert "GPU jobs" in body and "Changed files" in body


def test_ten_thousand_statuses_of_a_head_are_read_to_the_bound(advisory) -> None:
    def flood(head: str) -> None:
        for n in range(10_000):
            advisory.github.add_status(REPO, head, f"buildkite/ci/pr/shard-{n}", "success")
        advisory.github.add_status(REPO, head, f"buildkite/ci/pr/{SMOKE}", "success")

    number, _ = open_pr(advisory, before=flood)
    wait_for(lambda: "the newest 500 of each were read" in comment(advisory, number), what="note")
    wait_for(advisory.idle, what="idle")
    body = comment(advisory, number)
    # The newest status comes first, so the bound still finds it.
    assert f"repository's `buildkite/ci/pr/{SMOKE}`: ✅ passed" in body
    assert advisory.github.count_calls("GET", f"/repos/{REPO}/commits/") >= 5


def refreshes(stack) -> list:
    return [j for j in Queue(stack.service.engine).jobs(limit=1000) if j.kind == "jobs_refresh"]


def test_prbots_own_check_run_and_unselected_steps_are_no_news(advisory) -> None:
    gh = advisory.github
    number, head = open_pr(advisory)
    wait_for(lambda: "GPU jobs" in comment(advisory, number), what="the report")
    wait_for(advisory.idle, what="idle")
    # prbot's own run completing (its redraw does that) would otherwise redraw again, forever.
    [mine] = gh.check_runs(REPO, head)
    advisory.deliver("check_run", gh.check_run_event(REPO, mine["id"], "completed"))
    wait_for(advisory.idle, what="idle")
    assert refreshes(advisory) == []
    # Nor is a status of a step nobody selected (vLLM posts hundreds a build).
    other = gh.add_status(REPO, head, "buildkite/ci/pr/pre-commit", "success")
    advisory.deliver("status", gh.status_event(REPO, other))
    wait_for(advisory.idle, what="idle")
    assert refreshes(advisory) == []
    # Nor is `<step>-2` of a selected step without parallelism: that name is no shard of it.
    other = gh.add_status(REPO, head, f"buildkite/ci/pr/{OTHER}-2", "failure")
    advisory.deliver("status", gh.status_event(REPO, other))
    wait_for(advisory.idle, what="idle")
    assert refreshes(advisory) == []
    # Another app's status of a selected step of the same head is (here of its second shard).
    status = gh.add_status(REPO, head, f"buildkite/ci/pr/{SMOKE}-2", "pending")
    advisory.deliver("status", gh.status_event(REPO, status))
    wait_for(lambda: "buildkite/ci/pr/" in comment(advisory, number), what="the redraw")
    assert len(refreshes(advisory)) == 1


def test_check_runs_of_an_app_that_does_not_count_are_no_news(advisory) -> None:
    # A PR's own workflow can name its jobs after a selected step. Its runs never count
    # (vLLM's rules count no app's), so their news redraws nothing: each redraw reads the
    # head's check runs and statuses, and a matrix of such jobs spent the installation's calls.
    gh = advisory.github
    number, head = open_pr(advisory)
    wait_for(lambda: "GPU jobs" in comment(advisory, number), what="the report")
    wait_for(advisory.idle, what="idle")
    for _ in range(3):
        run_id = gh.add_foreign_check_run(REPO, head, SMOKE, app_slug="github-actions")
        for action in ("created", "completed"):
            event = gh.check_run_event(REPO, run_id, action, sender="contributor")
            advisory.deliver("check_run", event)
        advisory.deliver("check_suite", gh.check_suite_event(REPO, run_id, "completed"))
    wait_for(advisory.idle, what="idle")
    assert refreshes(advisory) == []


def test_the_repositorys_build_naming_a_pending_dispatch_still_redraws(dispatching) -> None:
    # Buildkite refuses prbot's build, so its dispatch waits with its key. The repository's
    # own build of the head (whose PR code set prbot_dispatch to that key) is not bound to
    # the dispatch, and its news is still the repository's: the report shows its step.
    from bot.store import jobs as jobs_store

    bk = dispatching.buildkite
    bk.create_status = 503
    number, head = open_pr(dispatching)
    wait_for(lambda: bk.count_calls("POST", "/builds") >= 1, what="the refused create")
    wait_for(dispatching.idle, what="idle")
    waiting = jobs_store.records_for_head(dispatching.service.engine, REPO, number, head)
    [key] = {r.dispatch_key for r in waiting if r.claimed_without_build}
    own = bk.add_build(head, {SMOKE: "running"}, branch="flash", meta_data={"prbot_dispatch": key})
    bk.finish_job(own, SMOKE, "failed")
    wait_for(lambda: f"build #{own}" in comment(dispatching, number), what="the redraw")
    wait_for(dispatching.idle, what="idle")
    assert f"repository's build #{own}: [❌ failed]" in comment(dispatching, number)
    bound = jobs_store.records_for_head(dispatching.service.engine, REPO, number, head)
    assert bk.builds[own].id not in {r.build_id for r in bound}
