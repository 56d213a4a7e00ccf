"""Selecting GPU smoke steps and benchmarks from step files, rules and the hardware targeted."""

from bot.jobs.buildkite_steps import dependency_matches, matching_evidence, parse_step_file
from bot.jobs.selection import (
    BENCHMARK,
    RuleJob,
    hardware_target,
    select_rule_jobs,
    select_steps,
)

# Shaped like vLLM's .buildkite/test_areas files (written for this test).
ATTENTION_STEPS = """
group: Attention
depends_on: [image-build]
steps:
- label: ":nvidia: (H100) V1 Attention"
  key: v1-attention-h100
  device: h100
  source_file_dependencies:
    - vllm/v1/attention
    - tests/v1/attention
  commands: [pytest -v -s v1/attention]
  mirror:
    amd:
      label: ":amd: (MI300) V1 Attention"
      device: mi300_1
      source_file_dependencies: [vllm/platforms/rocm.py]
- label: ":nvidia: (B200) V1 Attention"
  key: v1-attention-b200
  device: b200-k8s
  source_file_dependencies:
    - vllm/v1/attention
    - tests/v1/attention
  commands: [pytest -v -s v1/attention]
- label: ":nvidia: (B200) Attention Benchmark Smoke"
  key: attention-benchmarks-smoke-b200
  device: b200-k8s
  optional: true
  source_file_dependencies:
    - benchmarks/attention_benchmarks/
    - vllm/v1/attention/
- label: Docs
  key: docs-build
  device: cpu-small
  source_file_dependencies: ["docs/", "!docs/design/"]
- label: Always (old reading)
  key: old-always
  source_file_dependencies: []
"""

GPU_DEVICES = {
    "9.0": frozenset({"h100", "h200"}),
    "10.0": frozenset({"b200", "b200-k8s"}),
    "rocm": frozenset({"mi300_1", "mi355_2"}),
}
SCOPE = ["vllm/v1/attention/backends/**"]
NEUTRAL = ["vllm/v1/attention/backends/registry.py"]
CANDIDATES = ["v1-attention-*", "attention-benchmarks-smoke-*", "docs-build"]
BACKEND = "vllm/v1/attention/backends/mla/tokenspeed_mla.py"
PR_41778 = [
    BACKEND,
    "vllm/v1/attention/backends/registry.py",
    "vllm/platforms/cuda.py",
    "tests/v1/attention/test_mla_backends.py",
]


def steps():
    found, problems = parse_step_file(ATTENTION_STEPS, ".buildkite/test_areas/attention.yaml")
    assert problems == []
    return found


def select(paths, declared):
    target = hardware_target(paths, declared, scope=SCOPE, neutral=NEUTRAL)
    chosen, dropped = select_steps(
        paths,
        steps(),
        candidates=CANDIDATES,
        mode="prefix",
        empty="nothing",
        target=target,
        gpu_devices=GPU_DEVICES,
    )
    return {job.step_key: job for job in chosen}, dropped


def test_step_files_give_keys_devices_and_mirrors_with_the_parents_dependencies() -> None:
    by_key = {step.key: step for step in steps()}
    assert by_key["v1-attention-h100"].device == "h100"
    mirror = by_key["v1-attention-h100-amd"]
    assert mirror.device == "mi300_1" and mirror.mirror_of == "v1-attention-h100"
    assert mirror.dependencies == (
        "vllm/v1/attention",
        "tests/v1/attention",
        "vllm/platforms/rocm.py",
    )
    assert by_key["attention-benchmarks-smoke-b200"].optional
    assert by_key["v1-attention-b200"].group == "Attention"


def test_an_sm100_only_backend_gets_the_b200_steps_not_the_h100_one() -> None:
    declared = {
        BACKEND: (GPU_DEVICES["10.0"], "TokenspeedMLABackend runs only on compute capability 10.x")
    }
    chosen, dropped = select(PR_41778, declared)
    assert set(chosen) == {"v1-attention-b200", "attention-benchmarks-smoke-b200"}
    assert chosen["v1-attention-b200"].hardware == "b200-k8s"
    assert chosen["v1-attention-b200"].reason == (f"{BACKEND} is under vllm/v1/attention (+2 more)")
    assert sorted(dropped) == ["v1-attention-h100 (h100)", "v1-attention-h100-amd (mi300_1)"]


def test_a_step_on_a_machine_that_is_no_gpu_is_never_a_gpu_job() -> None:
    chosen, _ = select(["docs/usage.md"], {})
    assert "docs-build" not in chosen


def test_an_h100_capable_backend_is_not_sent_to_b200_only() -> None:
    both = GPU_DEVICES["9.0"] | GPU_DEVICES["10.0"]
    declared = {BACKEND: (both, "FlashMLABackend runs only on compute capability 9.x, 10.x")}
    chosen, _ = select(PR_41778, declared)
    assert {"v1-attention-h100", "v1-attention-b200"} <= set(chosen)


def test_shared_backend_code_that_declares_nothing_narrows_nothing() -> None:
    paths = [*PR_41778, "vllm/v1/attention/backends/mla/common.py"]
    declared = {BACKEND: (GPU_DEVICES["10.0"], "x runs only on 10.x")}
    chosen, dropped = select(paths, declared)
    assert {"v1-attention-h100", "v1-attention-b200", "v1-attention-h100-amd"} <= set(chosen)
    assert dropped == []


def test_prefix_and_substring_readings() -> None:
    assert dependency_matches("vllm/", "vllm/x.py", "prefix")
    assert dependency_matches("vllm/v1/attention", "vllm/v1/attention/x.py", "prefix")
    assert not dependency_matches("vllm/v1/attention", "vllm/v1/attention_extra.py", "prefix")
    assert dependency_matches("vllm/v1/attention", "vllm/v1/attention_extra.py", "substring")
    assert not dependency_matches("/", "x.py", "prefix")


def test_both_readings_of_an_empty_dependency_list() -> None:
    (old,) = [step for step in steps() if step.key == "old-always"]
    assert matching_evidence(old, ["README.md"], mode="prefix", empty="nothing") == []
    assert matching_evidence(old, ["README.md"], mode="substring", empty="always") == [("", "")]


def test_an_excluded_path_does_not_select() -> None:
    (docs,) = [step for step in steps() if step.key == "docs-build"]
    assert matching_evidence(docs, ["docs/design/x.md"], mode="prefix", empty="nothing") == []
    assert matching_evidence(docs, ["docs/usage.md"], mode="prefix", empty="nothing") == [
        ("docs/", "docs/usage.md")
    ]


MLA_DECODE = RuleJob(
    name="MLA decode benchmark",
    kind=BENCHMARK,
    hardware="b200",
    run_if_changed=("vllm/v1/attention/backends/mla/*.py",),
    skip_if_only_changed=("docs/**", "**/*.md"),
    config="benchmarks/attention_benchmarks/configs/mla_decode.yaml",
    per_backend=True,
)


def test_the_mla_decode_benchmark_is_restricted_to_the_touched_backends() -> None:
    (job,) = select_rule_jobs(
        PR_41778, [MLA_DECODE], touched_backends={BACKEND: ["TOKENSPEED_MLA"]}
    )
    assert job.backends == ("TOKENSPEED_MLA",)
    assert job.config.endswith("mla_decode.yaml") and job.hardware == "b200"
    assert job.reason == f"{BACKEND} changed; backends TOKENSPEED_MLA"
    # No backend touched: a restricted benchmark would measure nothing new.
    assert select_rule_jobs(PR_41778, [MLA_DECODE], touched_backends={}) == []


def test_skip_if_only_changed_and_run_if_changed() -> None:
    docs_only = ["docs/design/attention_backends.md", "README.md"]
    assert select_rule_jobs(docs_only, [MLA_DECODE], touched_backends={}) == []
    unrelated = ["vllm/engine/core.py"]
    assert select_rule_jobs(unrelated, [MLA_DECODE], touched_backends={}) == []


def test_bad_step_files_are_problems() -> None:
    assert parse_step_file("steps: [", "a.yaml")[1] == ["`a.yaml` is not valid YAML (line 1)"]
    assert parse_step_file("just text", "b.yaml")[1] == ["`b.yaml` has no `steps` list"]
    deep = "steps: " + "[" * 5000 + "]" * 5000
    found, problems = parse_step_file(deep, "c.yaml")
    assert found == [] and len(problems) == 1


def test_a_step_file_alias_bomb_is_one_problem_naming_its_line() -> None:
    lines = ["base: &s0 {label: x, key: k, commands: [a, b]}"]
    lines += [f"l{i}: &s{i} [*s{i - 1}, *s{i - 1}]" for i in range(1, 30)]
    text = "\n".join(lines) + "\nsteps: *s29\n"
    found, problems = parse_step_file(text, ".buildkite/test-pipeline.yaml")
    assert found == []
    assert problems == [
        "`.buildkite/test-pipeline.yaml` is not read: YAML that expands to more than "
        "1,000,000 nodes (line 18)"
    ]


def test_a_steps_parallelism_is_read_and_carried_to_the_selected_job() -> None:
    from bot.jobs.planner import WantedJob

    text = """
steps:
- label: "(B200) Sharded"
  key: sharded-b200
  device: b200
  parallelism: 4
  source_file_dependencies: [vllm/v1/attention]
  mirror:
    amd:
      device: mi300_1
- label: "Odd values"
  key: odd
  parallelism: "many"
- label: "Too many"
  key: huge
  parallelism: 100000
"""
    found, problems = parse_step_file(text, ".buildkite/test_areas/x.yaml")
    assert problems == []
    assert {step.key: step.parallelism for step in found} == {
        "sharded-b200": 4,
        "sharded-b200-amd": 4,  # a mirror runs as its parent does unless it says otherwise
        "odd": 1,
        "huge": 1,
    }
    chosen, _ = select_steps(
        ["vllm/v1/attention/backends/x.py"],
        found,
        candidates=["sharded-*"],
        mode="prefix",
        empty="nothing",
        target=hardware_target(
            ["vllm/v1/attention/backends/x.py"], {}, scope=SCOPE, neutral=NEUTRAL
        ),
        gpu_devices=GPU_DEVICES,
    )
    job = next(j for j in chosen if j.step_key == "sharded-b200")
    assert job.parallelism == 4
    # The report stores it, and the worker reads it back from the stored finding.
    assert WantedJob.from_finding({"name": job.name, "parallelism": 4}).parallelism == 4
    assert WantedJob.from_finding({"name": job.name, "parallelism": True}).parallelism == 1


def test_a_per_backend_job_cites_the_files_of_the_backends_it_measures() -> None:
    # vLLM 0.23.0 -> 0.26.0: the sparse decode job said "mla/cutlass_mla.py changed (+15
    # more); backends FLASHINFER_MLA_SPARSE, ..." though it measures nothing of that file.
    dense = "vllm/v1/attention/backends/mla/cutlass_mla.py"
    sparse = "vllm/v1/attention/backends/mla/flashmla_sparse.py"
    utils = "vllm/v1/attention/backends/mla/sparse_utils.py"
    (job,) = select_rule_jobs(
        [dense, sparse, utils],
        [MLA_DECODE],
        touched_backends={dense: [], sparse: ["FLASHMLA_SPARSE"], utils: []},
    )
    assert job.reason == f"{sparse} changed; backends FLASHMLA_SPARSE"
