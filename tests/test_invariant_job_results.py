"""A GPU job's result comes only from the run or build prbot created: attacks over the whole
stack (the local GitHub with its Actions, the local Buildkite, prbot's intake and worker).

Each test is an attack from issue #21 that worked before: a fork's own workflow run on the
head SHA, a lint run on the head, a run in another installation's repository named with the
dispatch key, a Buildkite build whose meta-data a PR set, a replayed token-mode delivery.
The attacker is given the dispatch key each time (it is public once the real run shows it),
so what holds is the binding to the engine's own id, not the key's secrecy.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys

import httpx
import pytest

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.engines.actions import dispatch_key_in
from bot.report.render import MARKER
from bot.store import jobs as jobs_store

REPO = "acme/widgets"
SMOKE = "smoke-b200"
RULES = f"""extends: vllm
features:
  dispatch: true
  actions: true
checks:
  requirements:
    enabled: false
  jobs:
    steps: null
    jobs:
      - name: GPU smoke (Actions)
        kind: gpu_smoke
        hardware: b200
        engine: actions
        run_if_changed: ["widgets/**"]
        step_key: {SMOKE}
"""


@pytest.fixture
def stack(tmp_path):
    with LocalStack(tmp_path / "stack", default_rules="vllm") as running:
        running.github.create_repo(
            REPO,
            installation_id=INSTALLATION_ID,
            files={".github/prbot.yml": RULES, "widgets/core.py": "x = 1\n"},
        )
        running.github.set_permission(REPO, "maintainer", "write")
        yield running


def report(stack, number: int) -> str:
    found = [c for c in stack.github.comments(REPO, number) if MARKER in c["body"]]
    return found[0]["body"] if found else ""


def dispatched(stack) -> tuple[int, str, int, str]:
    """A trusted PR whose smoke job prbot dispatched: (number, head, run id, dispatch key)."""
    gh = stack.github
    gh.commit(REPO, "feature", {"widgets/core.py": "x = 2\n"})
    pull = gh.open_pull_request(
        REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
    )
    stack.deliver("pull_request", gh.pull_request_event(REPO, pull["number"], "opened"))
    wait_for(lambda: "🕒 queued" in report(stack, pull["number"]), what="the queued job")
    wait_for(stack.idle, what="idle")
    (run_id,) = gh.actions.runs
    key = dispatch_key_in(gh.actions.runs[run_id].display_title)
    assert key is not None
    return pull["number"], pull["head"]["sha"], run_id, key


def foreign_run(stack, repo: str, head: str, title: str, *, event: str, conclusion: str) -> dict:
    """A run prbot did not dispatch, finished with ``conclusion`` on the smoke step's name."""
    actions = stack.github.actions
    run_id = actions.add_run(repo, head_sha=head, title=title, event=event)
    return actions.finish(run_id, conclusion, jobs={SMOKE: conclusion})


def check_run(stack, head: str) -> dict:
    (run,) = stack.github.check_runs(REPO, head)
    return run


def assert_not_passed(run: dict) -> None:
    """A finished check run that is no pass: failure, or neutral where the CI signal has no
    base builds to call the failure new (docs/gpu-jobs.md)."""
    assert run["status"] == "completed" and run["conclusion"] in ("failure", "neutral")


def test_a_forks_own_run_on_the_head_never_becomes_the_jobs_result(stack) -> None:
    number, head, run_id, key = dispatched(stack)
    # The fork PR's own pull_request workflow, once named like the smoke step (the head-SHA
    # fallback took it) and once with the dispatch key in its run-name.
    for title in ("GPU smoke (Actions)", f"prbot {key}"):
        payload = foreign_run(stack, REPO, head, title, event="pull_request", conclusion="success")
        assert stack.deliver("workflow_run", payload).status_code == 202
    wait_for(stack.idle, what="idle")
    body = report(stack, number)
    assert "✅ passed" not in body and "🕒 queued" in body
    assert check_run(stack, head)["status"] == "in_progress"
    # The real run fails: that is the job's result.
    payload = stack.github.actions.finish(run_id, "failure", jobs={SMOKE: "failure"})
    stack.deliver("workflow_run", payload)
    wait_for(lambda: "❌ failed" in report(stack, number), what="the real run's failure")
    wait_for(stack.idle, what="idle")
    assert_not_passed(check_run(stack, head))


def test_another_ci_run_on_the_head_leaves_the_gpu_jobs_alone(stack) -> None:
    number, head, run_id, _ = dispatched(stack)
    actions = stack.github.actions
    lint = actions.add_run(REPO, head_sha=head, title="lint", event="pull_request")
    stack.deliver("workflow_run", actions.finish(lint, "success", jobs={"ruff": "success"}))
    wait_for(stack.idle, what="idle")
    body = report(stack, number)
    assert "🕒 queued" in body and "canceled" not in body
    assert check_run(stack, head)["status"] == "in_progress"
    stack.deliver("workflow_run", actions.finish(run_id, "success", jobs={SMOKE: "success"}))
    wait_for(lambda: "✅ passed" in report(stack, number), what="the real run's pass")
    wait_for(stack.idle, what="idle")
    # Not a failure: the jobs pass. (Neutral, not success: the local App's token lacks the
    # members: read that dispatch asks for, which the report warns about in one line.)
    assert check_run(stack, head)["conclusion"] == "neutral"
    assert "GPU jobs on b200: 1 passed" in report(stack, number)


def test_a_run_in_another_installations_repository_never_reports(stack) -> None:
    gh = stack.github
    number, head, run_id, key = dispatched(stack)
    gh.add_installation(2, "mallory")
    gh.create_repo("mallory/widgets", installation_id=2, files={"a.py": "x = 1\n"})

    def attack(dispatch_key: str) -> None:
        payload = foreign_run(
            stack,
            "mallory/widgets",
            head,
            f"prbot {dispatch_key}",
            event="workflow_dispatch",
            conclusion="success",
        )
        assert stack.deliver("workflow_run", payload).status_code == 202
        wait_for(stack.idle, what="idle")
        assert "✅ passed" not in report(stack, number)
        assert "mallory" not in report(stack, number)

    attack(key)
    # The real run's own news, as another installation would send it (a repository name
    # taken over after a rename): not the record's installation, so not its result.
    spoofed = gh.actions.finish(run_id, "success", jobs={SMOKE: "success"})
    spoofed = {**spoofed, "installation": {"id": 2}}
    stack.deliver("workflow_run", spoofed)
    wait_for(stack.idle, what="idle")
    assert "✅ passed" not in report(stack, number)

    # The real run fails; /recheck dispatches attempt 2, whose key the attacker also has.
    payload = gh.actions.finish(run_id, "failure", jobs={SMOKE: "failure"})
    stack.deliver("workflow_run", payload)
    wait_for(lambda: "❌ failed" in report(stack, number), what="the failure")
    note = gh.add_user_comment(REPO, number, "maintainer", "/recheck")
    stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, note))
    wait_for(lambda: len(gh.actions.dispatches) == 2, what="the second dispatch")
    wait_for(stack.idle, what="idle")
    second = gh.actions.dispatches[1]["inputs"]["prbot_dispatch"]
    assert second != key
    attack(second)
    assert "🕒 queued" in report(stack, number)
    # Nor could the attacker have computed either key: not the sha256 of public facts.
    for dispatch_key, attempt in ((key, 1), (second, 2)):
        public = "\n".join([REPO, str(number), head, "head", f"GPU smoke (Actions)\x00{attempt}"])
        assert dispatch_key != "prbot-" + hashlib.sha256(public.encode()).hexdigest()[:32]


def test_on_an_older_server_a_run_named_like_prbots_is_not_taken_for_it(stack) -> None:
    gh = stack.github
    # No run in the dispatch's answer, and the run appears a moment later: the record waits
    # for a run named with its key, which a fork's pull_request workflow can also be named.
    gh.actions.details = gh.actions.immediate = False
    gh.commit(REPO, "feature", {"widgets/core.py": "x = 2\n"})
    pull = gh.open_pull_request(
        REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
    )
    number, head = pull["number"], pull["head"]["sha"]
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
    wait_for(lambda: gh.actions.dispatches, what="a dispatch")
    wait_for(stack.idle, what="idle")
    key = gh.actions.dispatches[0]["inputs"]["prbot_dispatch"]
    payload = foreign_run(
        stack, REPO, head, f"prbot {key}", event="pull_request", conclusion="success"
    )
    stack.deliver("workflow_run", payload)
    wait_for(stack.idle, what="idle")
    assert "✅ passed" not in report(stack, number)
    (real,) = gh.actions.start_pending()
    stack.deliver("workflow_run", gh.actions.finish(real, "failure", jobs={SMOKE: "failure"}))
    wait_for(lambda: "❌ failed" in report(stack, number), what="the real run's failure")
    wait_for(stack.idle, what="idle")
    assert_not_passed(check_run(stack, head))


def pending_dispatch(stack) -> tuple[int, str, str]:
    """A trusted PR dispatched on a server that names no run, whose run GitHub has not
    started yet: the record waits for its run. (number, head, the pending dispatch key)."""
    gh = stack.github
    gh.actions.details = gh.actions.immediate = False
    gh.commit(REPO, "feature", {"widgets/core.py": "x = 2\n"})
    pull = gh.open_pull_request(
        REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
    )
    number, head = pull["number"], pull["head"]["sha"]
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
    wait_for(lambda: gh.actions.dispatches, what="a dispatch")
    wait_for(stack.idle, what="idle")
    return number, head, gh.actions.dispatches[0]["inputs"]["prbot_dispatch"]


@pytest.mark.parametrize(
    ("event", "workflow", "actor"),
    [
        # A writer (who can dispatch any workflow) starts prbot's own workflow by hand, named
        # with the pending key: the same event, workflow path and title; only the actor differs.
        ("workflow_dispatch", "prbot-gpu.yml", "maintainer"),
        # A workflow of the repository (a pull_request_target one a fork PR triggers) that
        # dispatches prbot's workflow with GITHUB_TOKEN: GitHub names github-actions[bot].
        ("workflow_dispatch", "prbot-gpu.yml", "github-actions[bot]"),
        # A repository_dispatch (any token with contents: write) that prbot's workflow
        # answers, or another workflow run by hand, titled with the key.
        ("repository_dispatch", "prbot-gpu.yml", "maintainer"),
        ("workflow_dispatch", "other.yml", "maintainer"),
    ],
)
def test_a_run_prbots_dispatch_did_not_start_is_not_taken_for_it(
    stack, event: str, workflow: str, actor: str
) -> None:
    gh = stack.github
    number, head, key = pending_dispatch(stack)
    by_hand = gh.actions.add_run(
        REPO, head_sha=head, title=f"prbot {key}", event=event, workflow=workflow, actor=actor
    )
    payload = gh.actions.finish(by_hand, "success", jobs={SMOKE: "success"})
    assert payload["workflow_run"]["actor"]["login"] == actor
    assert stack.deliver("workflow_run", payload).status_code == 202
    wait_for(stack.idle, what="idle")
    assert "✅ passed" not in report(stack, number) and "🕒 queued" in report(stack, number)
    # prbot's own run (its actor is the App's bot) is the job's result.
    (real,) = gh.actions.start_pending()
    assert gh.actions.run_json(gh.actions.runs[real])["actor"]["login"] == gh.bot_login
    stack.deliver("workflow_run", gh.actions.finish(real, "failure", jobs={SMOKE: "failure"}))
    wait_for(lambda: "❌ failed" in report(stack, number), what="the real run's failure")
    wait_for(stack.idle, what="idle")
    assert_not_passed(check_run(stack, head))


def test_an_earlier_attempts_run_reporting_late_changes_nothing(stack) -> None:
    gh = stack.github
    number, head, first, _ = dispatched(stack)
    stack.deliver("workflow_run", gh.actions.finish(first, "failure", jobs={SMOKE: "failure"}))
    wait_for(lambda: "❌ failed" in report(stack, number), what="the failure")
    note = gh.add_user_comment(REPO, number, "maintainer", "/recheck")
    stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, note))
    wait_for(lambda: len(gh.actions.runs) == 2, what="attempt 2's run")
    wait_for(stack.idle, what="idle")
    second = max(gh.actions.runs)
    # The first attempt's run, re-run by a writer until it passed, reports late (and its
    # completed news is redelivered): the record is attempt 2's, bound to attempt 2's run.
    gh.actions.runs[first].triggering_actor, gh.actions.runs[first].run_attempt = "maintainer", 2
    late = gh.actions.finish(first, "success", jobs={SMOKE: "success"})
    for _ in range(2):
        stack.deliver("workflow_run", late)
    wait_for(stack.idle, what="idle")
    assert "✅ passed" not in report(stack, number) and "🕒 queued" in report(stack, number)
    stack.deliver("workflow_run", gh.actions.finish(second, "failure", jobs={SMOKE: "failure"}))
    wait_for(lambda: "❌ failed" in report(stack, number), what="attempt 2's failure")
    wait_for(stack.idle, what="idle")
    assert_not_passed(check_run(stack, head))


BK_REPO = "acme/kernels"
BK_STEP = "v1-attention-b200"
BK_RULES = f"""extends: vllm
features:
  dispatch: true
checks:
  requirements:
    enabled: false
  jobs:
    steps: null
    jobs:
      - name: GPU smoke (Buildkite)
        kind: gpu_smoke
        hardware: b200
        engine: buildkite
        run_if_changed: ["kernels/**"]
        step_key: {BK_STEP}
"""


@pytest.fixture
def bk_stack(tmp_path):
    with LocalStack(tmp_path / "stack", default_rules="vllm", buildkite=True) as running:
        running.github.create_repo(
            BK_REPO,
            installation_id=INSTALLATION_ID,
            files={".github/prbot.yml": BK_RULES, "kernels/mla.py": "x = 1\n"},
        )
        yield running


def bk_report(stack, number: int) -> str:
    found = [c for c in stack.github.comments(BK_REPO, number) if MARKER in c["body"]]
    return found[0]["body"] if found else ""


def bk_dispatched(stack) -> tuple[int, str, int]:
    """A trusted PR whose smoke build prbot created: (number, head, build number)."""
    gh, bk = stack.github, stack.buildkite
    gh.commit(BK_REPO, "feature", {"kernels/mla.py": "x = 2\n"})
    pull = gh.open_pull_request(
        BK_REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
    )
    stack.deliver("pull_request", gh.pull_request_event(BK_REPO, pull["number"], "opened"))
    wait_for(lambda: "🕒 queued" in bk_report(stack, pull["number"]), what="the queued job")
    wait_for(stack.idle, what="idle")
    (number,) = bk.builds
    return pull["number"], pull["head"]["sha"], number


def test_a_buildkite_build_prbot_did_not_create_never_reports(bk_stack) -> None:
    stack, bk = bk_stack, bk_stack.buildkite
    number, head, real = bk_dispatched(stack)
    key = bk.builds[real].body["meta_data"]["prbot_dispatch"]
    # The PR's own build in the pipeline (its CI, on the same head) ran
    # `buildkite-agent meta-data set prbot_dispatch <key>` and passed; Buildkite's webhook
    # about it is genuine, and signed.
    forged = bk.add_build(
        head, {BK_STEP: "scheduled"}, branch="feature", meta_data={"prbot_dispatch": key}
    )
    bk.finish_job(forged, BK_STEP, "passed")
    wait_for(stack.idle, what="idle")
    assert bk.deliveries[-2:] == [202, 202]
    assert "✅ passed" not in bk_report(stack, number)
    assert "🕒 queued" in bk_report(stack, number)
    bk.finish_job(real, BK_STEP, "failed")
    wait_for(lambda: "❌ failed" in bk_report(stack, number), what="the real build's failure")
    wait_for(stack.idle, what="idle")
    # The check run is no pass either (neutral: with no base builds to compare, the CI
    # signal cannot call the failure new, docs/gpu-jobs.md).
    (run,) = stack.github.check_runs(BK_REPO, head)
    assert run["status"] == "completed" and run["conclusion"] not in ("success", None)


@pytest.mark.parametrize(
    ("source", "made_by", "for_pr"),
    [
        # Another user's API token (a maintainer's own, or the repository's /ci run bot):
        # source api, like prbot's, but its creator is that token's user.
        ("api", "another token", "this PR"),
        # A trigger step a PR's code uploaded into prbot's own build (its creator may be
        # prbot's user), and a build started in Buildkite's web UI.
        ("trigger_job", "prbot's token", "this PR"),
        ("ui", "prbot's token", "this PR"),
        # prbot's own build for another PR at the same commit (the branch opened twice),
        # whose code set that build's prbot_dispatch to this PR's pending key.
        ("api", "prbot's token", "another PR"),
    ],
)
def test_a_build_prbots_token_did_not_create_is_not_taken_for_a_pending_dispatch(
    bk_stack, source: str, made_by: str, for_pr: str
) -> None:
    stack, bk, gh = bk_stack, bk_stack.buildkite, bk_stack.github
    # Buildkite is down when prbot creates the build: the claim is recorded, its build not.
    bk.create_status = 503
    gh.commit(BK_REPO, "feature", {"kernels/mla.py": "x = 2\n"})
    pull = gh.open_pull_request(
        BK_REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
    )
    number, head = pull["number"], pull["head"]["sha"]
    stack.deliver("pull_request", gh.pull_request_event(BK_REPO, number, "opened"))
    wait_for(lambda: bk.count_calls("POST", "/builds") >= 1, what="the refused create")
    wait_for(stack.idle, what="idle")
    (claim,) = jobs_store.records_for_head(stack.service.engine, BK_REPO, number, head)
    assert claim.claimed_without_build
    other = bk.add_token("maintainer-own-token", "A Maintainer")
    creator = other if made_by == "another token" else bk.users[bk.token]
    made = bk.add_build(
        head,
        {BK_STEP: "scheduled"},
        branch="feature",
        meta_data={"prbot_dispatch": claim.dispatch_key},
        source=source,
        creator=creator,
        pull_request_id=number if for_pr == "this PR" else number + 1,
    )
    listed = httpx.get(
        f"{bk.url}{bk.pipeline_path}/builds/{made}",
        headers={"Authorization": "Bearer maintainer-own-token"},
    ).json()
    assert (listed["source"], listed["creator"]) == (source, creator)
    bk.finish_job(made, BK_STEP, "passed")
    wait_for(stack.idle, what="idle")
    assert "✅ passed" not in bk_report(stack, number)
    bk.create_status = None
    # The dispatch's retry makes prbot's own build (its creator is prbot's token's user),
    # and that build's failure is the job's result.
    wait_for(lambda: len(bk.builds) == 2, what="prbot's own build", timeout=60)
    wait_for(stack.idle, what="idle")
    ours = max(bk.builds)
    assert bk.builds[ours].creator == bk.users[bk.token]
    bk.finish_job(ours, BK_STEP, "failed")
    wait_for(lambda: "❌ failed" in bk_report(stack, number), what="the real build's failure")
    bound = jobs_store.records_for_head(stack.service.engine, BK_REPO, number, head)
    assert [r.build_id for r in bound] == [bk.builds[ours].id]


def test_a_replayed_token_mode_delivery_is_refused(bk_stack) -> None:
    stack, bk = bk_stack, bk_stack.buildkite
    bk.webhook_mode = "token"  # Buildkite's plain X-Buildkite-Token: no signed timestamp
    number, _, real = bk_dispatched(stack)
    # A delivery captured long ago (another build's job.finished), replayed now.
    captured = bk.finish_job(real, BK_STEP, "passed", deliver=False)
    long_ago = "2020-01-01T00:00:00.000Z"
    old_build = {**captured["build"], "created_at": long_ago, "finished_at": long_ago}
    old_job = {**captured["job"], "created_at": long_ago, "finished_at": long_ago}
    old_build["jobs"] = [old_job]
    assert bk.deliver("job.finished", {**captured, "build": old_build, "job": old_job}) == 401
    wait_for(stack.idle, what="idle")
    assert "🕒 queued" in bk_report(stack, number)
    # Fresh news is taken, once: the same delivery again is a duplicate.
    assert bk.deliver("job.finished", captured) == 202
    assert bk.deliver("job.finished", captured) == 200
    wait_for(lambda: "✅ passed" in bk_report(stack, number), what="the pass")


def test_a_real_worker_process_binds_none_of_the_forged_runs(tmp_path) -> None:
    # The attacks of rows 5 and 12 of docs/benchmarks/redteam_job_results.md once more, with
    # the binding done by a real `prbot worker` process (the stack's intake stores, the
    # worker process reads the queue, asks the engines and writes the records).
    with LocalStack(
        tmp_path / "stack", default_rules="vllm", buildkite=True, with_worker=False
    ) as stack:
        gh, bk = stack.github, stack.buildkite
        gh.create_repo(
            REPO,
            installation_id=INSTALLATION_ID,
            files={".github/prbot.yml": RULES, "widgets/core.py": "x = 1\n"},
        )
        gh.set_permission(REPO, "maintainer", "write")
        gh.create_repo(
            BK_REPO,
            installation_id=INSTALLATION_ID,
            files={".github/prbot.yml": BK_RULES, "kernels/mla.py": "x = 1\n"},
        )
        worker = subprocess.Popen(
            [sys.executable, "-m", "bot", "worker"],
            env=stack.worker_environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # Actions: a writer's own dispatch of prbot's workflow, titled with the pending key.
            number, head, key = pending_dispatch(stack)
            by_hand = gh.actions.add_run(
                REPO,
                head_sha=head,
                title=f"prbot {key}",
                event="workflow_dispatch",
                workflow="prbot-gpu.yml",
                actor="maintainer",
            )
            stack.deliver(
                "workflow_run", gh.actions.finish(by_hand, "success", jobs={SMOKE: "success"})
            )
            # Buildkite: prbot's build for another PR at the same commit, its prbot_dispatch
            # set to a claim's key while Buildkite refuses the claim's create.
            bk.create_status = 503
            gh.commit(BK_REPO, "feature", {"kernels/mla.py": "x = 2\n"})
            pull = gh.open_pull_request(
                BK_REPO, head_branch="feature", title="T", author="m", author_association="MEMBER"
            )
            bk_number, bk_head = pull["number"], pull["head"]["sha"]
            stack.deliver("pull_request", gh.pull_request_event(BK_REPO, bk_number, "opened"))
            wait_for(lambda: bk.count_calls("POST", "/builds") >= 1, what="the refused create")
            wait_for(stack.idle, what="idle")
            (claim,) = jobs_store.records_for_head(
                stack.service.engine, BK_REPO, bk_number, bk_head
            )
            other = bk.add_build(
                bk_head,
                {BK_STEP: "scheduled"},
                branch="feature",
                meta_data={"prbot_dispatch": claim.dispatch_key},
                source="api",
                creator=bk.users[bk.token],
                pull_request_id=bk_number + 1,
            )
            bk.finish_job(other, BK_STEP, "passed")
            wait_for(stack.idle, what="idle")
            assert "✅ passed" not in report(stack, number)
            assert "✅ passed" not in bk_report(stack, bk_number)
            record = jobs_store.get_record(stack.service.engine, claim.key)
            assert record is not None and record.build_id is None
            # The real run is still the job's result, through the same worker process.
            (real,) = gh.actions.start_pending()
            stack.deliver(
                "workflow_run", gh.actions.finish(real, "failure", jobs={SMOKE: "failure"})
            )
            wait_for(lambda: "❌ failed" in report(stack, number), what="the real run's failure")
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=30)
