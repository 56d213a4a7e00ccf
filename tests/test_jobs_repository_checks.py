"""Other apps' check runs and commit statuses of a head, read as smoke-step states (pure)."""

from __future__ import annotations

from bot.jobs.config import JobsRules
from bot.jobs.repository_checks import StepName, label_slug, names_for, steps_in_checks

VLLM = ["buildkite/ci/pr/{key}", "buildkite/ci/pr/{slug}"]
SMOKE = StepName("v1-attention-b200", "(B200) V1 Attention", parallelism=2)
OTHER = StepName("kernels-b200", "Kernels + MoE (B200)")


def status(context: str, state: str, url: str = "https://buildkite.com/vllm/ci/builds/7#j") -> dict:
    return {"context": context, "state": state, "target_url": url}


def run(name: str, status: str = "completed", conclusion: str | None = "success", app=7) -> dict:
    return {
        "name": name,
        "status": status,
        "conclusion": conclusion,
        "details_url": f"https://ci.example/{name}",
        "app": {"id": app, "slug": f"app-{app}"},
    }


def seen(check_runs=(), statuses=(), names=VLLM, steps=(SMOKE, OTHER), apps=("app-7",)) -> dict:
    found = steps_in_checks(
        list(check_runs),
        list(statuses),
        steps,
        names,
        own_app_id=1,
        own_slug="prbot",
        check_run_apps=apps,
    )
    return {key: (s.state, s.ran, s.source, s.context) for key, s in found.items()}


def test_a_label_is_slugged_as_buildkite_writes_a_status_context():
    assert label_slug("(B200) V1 Attention") == "b200-v1-attention"
    assert label_slug("Kernels + MoE (B200)") == "kernels-moe-b200"
    assert names_for(SMOKE, VLLM) == {
        "buildkite/ci/pr/v1-attention-b200",
        "buildkite/ci/pr/b200-v1-attention",
    }
    assert names_for(SMOKE, ["{unknown}", "{0}", "{key"]) == set()
    assert names_for(OTHER, ["{slug_words}"]) == {"kernels-plus-moe-b200"}
    assert names_for(StepName("k", "Dist / pp.2"), ["{slug_words}"]) == {"dist-slash-pp-dot-2"}


def test_a_shard_of_a_step_names_the_step():
    statuses = [status("buildkite/ci/pr/v1-attention-b200-2", "failure")]
    assert seen(statuses=statuses)["v1-attention-b200"][:2] == ("failed", True)
    assert seen(statuses=[status("buildkite/ci/pr/v1-attention-b200-x", "failure")]) == {}
    # Past its job count it is not one of its shards.
    assert seen(statuses=[status("buildkite/ci/pr/v1-attention-b200-3", "failure")]) == {}


def test_a_numbered_name_is_no_shard_of_a_step_without_parallelism():
    # `kernels-b200-2` can be another step's own key: it is not read as this step's state.
    statuses = [status("buildkite/ci/pr/kernels-b200-2", "failure")]
    assert seen(statuses=statuses) == {}
    statuses.append(status("buildkite/ci/pr/kernels-b200", "success"))
    assert seen(statuses=statuses)["kernels-b200"][:2] == ("passed", True)


def test_vllms_statuses_name_steps_by_key_or_label_and_the_build_status_names_none():
    statuses = [
        status("buildkite/ci/pr", "pending"),  # the whole build
        status("buildkite/ci/pr/kernels-moe-b200", "failure"),
        status("buildkite/ci/pr/v1-attention-b200", "success"),
        status("buildkite/ci/pr/entrypoints", "failure"),  # a step nobody selected
    ]
    assert seen(statuses=statuses) == {
        "v1-attention-b200": ("passed", True, "status", "buildkite/ci/pr/v1-attention-b200"),
        "kernels-b200": ("failed", True, "status", "buildkite/ci/pr/kernels-moe-b200"),
    }
    assert seen(statuses=[status("buildkite/ci/pr/b200-v1-attention", "pending")]) == {
        "v1-attention-b200": ("pending", True, "status", "buildkite/ci/pr/b200-v1-attention")
    }


def test_check_runs_map_to_the_ci_words_and_prbots_own_never_counts():
    runs = [
        run("v1-attention-b200", "in_progress", None),
        run("kernels-b200", conclusion="cancelled"),
        run("(B200) V1 Attention", app=1),  # prbot's own App: never the repository's CI
    ]
    assert seen(runs, names=["{key}", "{label}"]) == {
        "v1-attention-b200": ("running", True, "check_run", "v1-attention-b200"),
        "kernels-b200": ("canceled", False, "check_run", "kernels-b200"),
    }
    mine = dict(run("v1-attention-b200"), app={"id": 99, "slug": "prbot"})
    assert seen([mine], names=["{key}"]) == {}


def test_the_newest_that_ran_wins_over_one_that_will_not_run():
    runs = [run("v1-attention-b200", conclusion="skipped"), run("v1-attention-b200", "queued")]
    assert seen(runs, names=["{key}"])["v1-attention-b200"][:2] == ("scheduled", True)


def test_bad_entries_and_unknown_states_are_dropped():
    statuses = [None, {"context": "buildkite/ci/pr/v1-attention-b200", "state": "weird"}, 3]
    runs = [run("v1-attention-b200", "completed", "nonsense"), {"name": None}, "x"]
    assert seen(runs, statuses, names=VLLM + ["{key}"]) == {}


def test_github_actions_runs_count_only_where_the_rules_name_the_app():
    # A PR's own workflow can name a job after a step: its run must not hide the step.
    actions = dict(run("v1-attention-b200"), app={"id": 15368, "slug": "github-actions"})
    assert seen([actions], names=["{key}"]) == {}
    assert seen([actions], names=["{key}"], apps=["github-actions"]) != {}
    assert seen([run("v1-attention-b200")], names=["{key}"], apps=[]) == {}
    assert seen([run("v1-attention-b200")], names=["{key}"], apps=["app-7"]) != {}


def test_no_app_speaks_for_a_step_unless_the_rules_name_it():
    # Any CI app that builds a fork's PR from the config in its tree (as GitHub Actions
    # does) names its check runs after that config's jobs: unset, none counts.
    other_ci = run("(B200) V1 Attention")  # app-7
    found = steps_in_checks([other_ci], [], [SMOKE], ["{label}"], own_app_id=1, own_slug="prbot")
    assert found == {}
    rules = JobsRules.model_validate({})
    assert rules.repository_checks.check_run_apps == []


def test_a_failed_shard_is_not_hidden_by_a_later_passing_one():
    # Newest first, as GitHub lists them: shard 2 passed after shard 1 failed.
    statuses = [
        status("buildkite/ci/pr/v1-attention-b200-2", "success"),
        status("buildkite/ci/pr/v1-attention-b200-1", "failure", "https://bk/1"),
    ]
    assert seen(statuses=statuses)["v1-attention-b200"] == (
        "failed",
        True,
        "status",
        "buildkite/ci/pr/v1-attention-b200-1",
    )
    # One shard still going keeps the step going; all passed is passed.
    going = [status("buildkite/ci/pr/v1-attention-b200-2", "success")]
    going.append(status("buildkite/ci/pr/v1-attention-b200-1", "pending"))
    assert seen(statuses=going)["v1-attention-b200"][:2] == ("pending", True)
    done = [status("buildkite/ci/pr/v1-attention-b200-2", "success")] * 2
    assert seen(statuses=done)["v1-attention-b200"][:2] == ("passed", True)
    # A check run that passed does not hide the step's failed status either.
    failed = [status("buildkite/ci/pr/v1-attention-b200", "failure")]
    checks = [run("buildkite/ci/pr/v1-attention-b200")]
    assert seen(check_runs=checks, statuses=failed)["v1-attention-b200"][0] == "failed"
