"""The jobs section on a vLLM-shaped git repository: the model case and its neighbours."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from bot.checks import jobs as jobs_check
from bot.core.snapshot import snapshot_from_checkout
from bot.report import rules
from bot.report.render import Report, render_markdown
from bot.report.runner import run_check

# Written for these tests, in the shape of vLLM's files.
STEPS = """
group: Attention
steps:
- label: ":nvidia: (H100) V1 Attention"
  key: v1-attention-h100-mi300
  device: h100
  source_file_dependencies: [vllm/v1/attention, tests/v1/attention]
  mirror:
    amd:
      device: mi300_1
      source_file_dependencies: [vllm/platforms/rocm.py]
- label: ":nvidia: (B200) V1 Attention"
  key: v1-attention-b200
  device: b200-k8s
  source_file_dependencies: [vllm/v1/attention, tests/v1/attention]
- label: ":nvidia: (H200) Entrypoints"
  key: entrypoints
  device: h200_18gb
  source_file_dependencies: [vllm/]
"""
REGISTRY = """from enum import Enum


class AttentionBackendEnum(Enum):
    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
"""
NEW_MEMBER = """    FAST_MLA = "vllm.v1.attention.backends.mla.fast_mla.FastMLABackend"
"""


def backend(condition: str) -> str:
    return (
        "class FastMLABackend(MLACommonBackend):\n"
        "    @classmethod\n"
        "    def supports_compute_capability(cls, capability: DeviceCapability) -> bool:\n"
        f"        return {condition}\n"
    )


BASE = {
    ".buildkite/test_areas/attention.yaml": STEPS,
    "vllm/v1/attention/backends/registry.py": REGISTRY,
    "vllm/v1/attention/backends/flash_attn.py": "class FlashAttentionBackend:\n    pass\n",
    "setup.py": "",
}


def section_for(repo, condition: str, *, trusted: bool = True):
    base = repo.commit(BASE, "base")
    head = repo.commit(
        {
            "vllm/v1/attention/backends/mla/fast_mla.py": backend(condition),
            "vllm/v1/attention/backends/registry.py": REGISTRY + NEW_MEMBER,
        },
        "add FAST_MLA",
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    snapshot = dataclasses.replace(snapshot, trusted=trusted)
    ruleset = rules.load_builtin("vllm")
    return snapshot, run_check(jobs_check.CHECK, snapshot, ruleset, None)


def by_name(section) -> dict[str, dict]:
    return {finding["name"]: finding for finding in section.findings}


def test_an_sm100_only_backend_gets_the_b200_smoke_step_and_its_mla_decode_benchmark(
    make_repo,
) -> None:
    _, section = section_for(make_repo("vllm"), "capability.major == 10")
    found = by_name(section)
    assert set(found) == {":nvidia: (B200) V1 Attention", "MLA decode benchmark"}
    smoke = found[":nvidia: (B200) V1 Attention"]
    assert (smoke["kind"], smoke["hardware"], smoke["step_key"]) == (
        "gpu_smoke",
        "b200-k8s",
        "v1-attention-b200",
    )
    bench = found["MLA decode benchmark"]
    assert bench["kind"] == "benchmark" and bench["backends"] == ["FAST_MLA"]
    assert bench["config"] == "benchmarks/attention_benchmarks/configs/mla_decode.yaml"
    assert {f["status"] for f in section.findings} == {"selected"}
    assert section.status == "pass"
    assert section.data["target"] == "FastMLABackend runs only on compute capability 10.x"
    assert "v1-attention-h100-mi300 (h100)" in section.data["dropped"]
    # The contract's fields are all there.
    assert all(
        {"name", "kind", "hardware", "reason", "status", "engine", "url"} <= set(f)
        for f in section.findings
    )


def test_an_h100_capable_backend_is_not_b200_only(make_repo) -> None:
    _, section = section_for(make_repo("vllm"), "capability.major in [9, 10]")
    machines = {f["hardware"] for f in section.findings if f["kind"] == "gpu_smoke"}
    assert {"h100", "b200-k8s"} <= machines


def test_an_untrusted_author_waits_for_approval(make_repo) -> None:
    snapshot, section = section_for(make_repo("vllm"), "capability.major == 10", trusted=False)
    assert section.status == "warn"
    assert {f["status"] for f in section.findings} == {"awaiting_approval"}
    assert "awaiting a maintainer's approval" in section.summary
    report = Report(snapshot.repo, snapshot.number, snapshot.head_sha, snapshot.base_sha)
    report.sections.append(section)
    text = render_markdown(report)
    assert "⏸️ awaiting approval" in text and "a new push needs a new approval" in text


def test_step_files_are_read_at_base_so_a_pr_cannot_choose_its_jobs(make_repo) -> None:
    repo = make_repo("vllm")
    base = repo.commit(BASE, "base")
    head = repo.commit(
        {
            ".buildkite/test_areas/attention.yaml": STEPS.replace(
                "v1-attention-b200", "v1-attention-sneaky"
            ),
            "vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10"),
        }
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    keys = {f["step_key"] for f in section.findings if f["step_key"]}
    assert keys == {"v1-attention-b200"}


def test_default_rules_configure_no_jobs(make_repo) -> None:
    repo = make_repo("plain")
    base = repo.commit({"a.py": "x = 1\n"})
    head = repo.commit({"a.py": "x = 2\n"})
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("default"), None)
    assert (section.status, section.summary) == ("skip", "no GPU jobs are configured")


def test_a_broken_step_file_is_a_problem_not_a_crash(make_repo) -> None:
    repo = make_repo("vllm")
    base = repo.commit({**BASE, ".buildkite/test_areas/broken.yaml": "steps: ["}, "base")
    head = repo.commit(
        {"vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10")}
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    assert section.status == "pass"
    assert section.data["problems"] == [
        "`.buildkite/test_areas/broken.yaml` is not valid YAML (line 1)"
    ]


# vLLM 0.20's step files: no `key:`, and a label the generator turns into one.
KEYLESS_STEPS = """
group: Attention
depends_on:
  - image-build
steps:
- label: V1 attention (H100)
  device: h100
  source_file_dependencies: [vllm/v1/attention, tests/v1/attention]
- label: V1 attention (B200)
  device: b200
  source_file_dependencies: [vllm/v1/attention, tests/v1/attention]
"""


def _with_steps(repo, steps: str):
    base = repo.commit({**BASE, ".buildkite/test_areas/attention.yaml": steps}, "base")
    head = repo.commit(
        {
            "vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10"),
            "vllm/v1/attention/backends/registry.py": REGISTRY + NEW_MEMBER,
        },
        "add FAST_MLA",
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    return run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)


def test_keyless_steps_are_matched_by_the_key_vllms_generator_gives_them(make_repo) -> None:
    section = _with_steps(make_repo("vllm"), KEYLESS_STEPS)
    smoke = [f for f in section.findings if f["kind"] == "gpu_smoke"]
    assert [(f["name"], f["step_key"], f["hardware"]) for f in smoke] == [
        ("V1 attention (B200)", "v1-attention-b200", "b200")
    ]
    assert "v1-attention-h100 (h100)" in section.data["dropped"]


def test_the_generators_key_for_a_label(make_repo) -> None:
    from bot.jobs.buildkite_steps import generated_key

    assert generated_key("V1 attention (B200)") == "v1-attention-b200"
    assert generated_key(":nvidia: Kernels: MoE 2/4, 50%+") == "-nvidia--kernels--moe-2-4--50-"


def test_step_files_with_no_candidate_are_said_not_silently_skipped(make_repo) -> None:
    renamed = KEYLESS_STEPS.replace("V1 attention", "Attention kernels")
    section = _with_steps(make_repo("vllm"), renamed)
    assert [f["kind"] for f in section.findings] == ["benchmark"]
    message = (
        "no step in the 1 step file read at base has a key matching the candidates "
        "(v1-attention-*, attention-benchmarks-smoke-*), so no smoke step can be chosen"
    )
    assert message in section.data["problems"]
    text = render_markdown(Report("org/vllm", 1, "a" * 40, "b" * 40, [section]))
    assert "⚠️ no step in the 1 step file read at base" in text
    assert "so no smoke step can be chosen" in text
    # With nothing chosen at all, the section says it rather than skipping quietly.
    repo = make_repo("vllm2")
    base = repo.commit({**BASE, ".buildkite/test_areas/attention.yaml": renamed}, "base")
    head = repo.commit({"vllm/v1/attention/backends/flash_attn.py": "class X:\n    pass\n"})
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    alone = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    assert alone.status == "warn" and alone.summary == f"no GPU job chosen: {message}"


def test_the_benchmark_is_on_the_machine_the_smoke_step_names(make_repo) -> None:
    # b200 (the rule job's name) and b200-k8s (the step file's) are one capability: one name.
    _, section = section_for(make_repo("vllm"), "capability.major == 10")
    assert {f["hardware"] for f in section.findings} == {"b200-k8s"}
    assert section.summary.endswith("selected on b200-k8s")


def test_a_benchmark_lists_only_the_backend_classes_that_can_run_on_its_machine(make_repo):
    # 0.27.1 -> 0.33.0 put AMX_MLA, CPU_MLA, XPU_MLA_SPARSE and an SM120 class on the B200
    # benchmark: hardware was read per file, and "declares nothing" meant "anywhere".
    registry = REGISTRY + "".join(
        f'    {name} = "vllm.v1.attention.backends.mla.{module}.{cls}"\n'
        for name, module, cls in (
            ("FAST_MLA", "fast_mla", "FastMLABackend"),
            ("FAST_MLA_SM120", "fast_mla", "FastMLASM120Backend"),
            ("FAST_MLA_SM120_LITE", "fast_mla", "FastMLASM120LiteBackend"),
            ("CPU_MLA", "cpu_mla", "CPUMLABackend"),
            ("XPU_MLA_SPARSE", "xpu_mla_sparse", "XPUMLASparseBackend"),
            ("TRITON_MLA", "triton_mla", "TritonMLABackend"),
        )
    )
    sm120 = (
        "\n\nclass FastMLASM120Backend(MLACommonBackend):\n"
        "    @classmethod\n"
        "    def supports_compute_capability(cls, capability):\n"
        "        return capability.major == 12\n"
        "\n\nclass FastMLASM120LiteBackend(FastMLASM120Backend):\n"
        "    pass\n"
    )
    enum = "AttentionBackendEnum"
    platforms = {
        "vllm/platforms/cuda.py": f"x = [{enum}.FAST_MLA, {enum}.TRITON_MLA]\n",
        "vllm/platforms/cpu.py": f"x = {enum}.CPU_MLA\n",
        "vllm/platforms/xpu.py": f"x = [{enum}.XPU_MLA_SPARSE, {enum}.TRITON_MLA]\n",
    }
    repo = make_repo("vllm")
    base = repo.commit({**BASE, **platforms}, "base")
    head = repo.commit(
        {
            "vllm/v1/attention/backends/registry.py": registry,
            "vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10") + sm120,
            "vllm/v1/attention/backends/mla/cpu_mla.py": "class CPUMLABackend:\n    pass\n",
            "vllm/v1/attention/backends/mla/xpu_mla_sparse.py": "class XPUMLASparseBackend: ...\n",
            "vllm/v1/attention/backends/mla/triton_mla.py": "class TritonMLABackend:\n    pass\n",
        },
        "many backends",
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    [bench] = [f for f in section.findings if f["kind"] == "benchmark"]
    assert bench["backends"] == ["FAST_MLA", "TRITON_MLA"]


PRIORITIES = """
def _get_backend_priorities(use_mla, device_capability):
    if use_mla:
        if device_capability.major == 10:
            return [
                AttentionBackendEnum.FLASHINFER_MLA,
                AttentionBackendEnum.FAST_MLA,
                AttentionBackendEnum.TRITON_MLA,
            ]
    return [AttentionBackendEnum.FLASH_ATTN]
"""


def test_a_benchmark_of_a_backend_absent_at_base_compares_backends_on_the_head(make_repo):
    # TOKENSPEED_MLA in its own PR: no base run of it can exist, so no base-vs-head ratio.
    repo = make_repo("vllm")
    base = repo.commit({**BASE, "vllm/platforms/cuda.py": PRIORITIES}, "base")
    head = repo.commit(
        {
            "vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10"),
            "vllm/v1/attention/backends/registry.py": REGISTRY + NEW_MEMBER,
        }
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    [bench] = [f for f in section.findings if f["kind"] == "benchmark"]
    assert bench["compare"] == "backends"
    assert bench["new_backends"] == ["FAST_MLA"] and bench["against"] == ["FLASHINFER_MLA"]
    assert "FAST_MLA not at base: measured against FLASHINFER_MLA on this head" in bench["reason"]
    # A backend that exists at base is compared with itself at the merge base.
    later = repo.commit(
        {
            "vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10")
            + "# tuned\n"
        }
    )
    snapshot = snapshot_from_checkout(repo.path, head, later, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    [bench] = [f for f in section.findings if f["kind"] == "benchmark"]
    assert (bench["compare"], bench["against"]) == ("base", [])


def test_new_backends_with_no_priority_branch_say_so_and_are_not_dispatched(make_repo):
    # Two new backends and a cuda.py without a branch for the B200's capability: the line says
    # which of the causes it is, in agreement with its subject.
    repo = make_repo("vllm")
    cuda = PRIORITIES.replace("major == 10", "major == 9")
    base = repo.commit({**BASE, "vllm/platforms/cuda.py": cuda}, "base")
    second = '    SLOW_MLA = "vllm.v1.attention.backends.mla.fast_mla.SlowMLABackend"\n'
    head = repo.commit(
        {
            "vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10")
            + "\n\nclass SlowMLABackend(FastMLABackend):\n    pass\n",
            "vllm/v1/attention/backends/registry.py": REGISTRY + NEW_MEMBER + second,
        }
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    [bench] = [f for f in section.findings if f["kind"] == "benchmark"]
    assert bench["no_incumbents"] and bench["new_backends"] == ["FAST_MLA", "SLOW_MLA"]
    [line] = [p for p in section.data["problems"] if "nothing to benchmark" in p]
    assert line == (
        "MLA decode benchmark is not dispatched: FAST_MLA, SLOW_MLA are not at base and prbot "
        "found no branch for compute capability 10 (b200-k8s) in vllm/platforms/cuda.py::"
        "_get_backend_priorities to take incumbents from, so there is nothing to benchmark "
        "it against"
    )


def test_a_benchmark_whose_step_the_pipeline_lacks_says_what_is_needed(make_repo) -> None:
    """Works before anything is added to the pipeline: the smoke step is still chosen from the
    repository's own step files, and the benchmark says which step it needs."""
    _, section = section_for(make_repo("vllm"), "capability.major == 10")
    bench = by_name(section)["MLA decode benchmark"]
    assert bench["missing_step"] is True
    assert "missing_step" not in by_name(section)[":nvidia: (B200) V1 Attention"]
    # It is not about to run, so its line does not say "selected" as the smoke step's does.
    text = render_markdown(Report("o/r", 1, "a" * 40, "b" * 40, [section]))
    [bench_line] = [ln for ln in text.splitlines() if "**MLA decode benchmark**" in ln]
    assert bench_line.startswith("- ⚪ not dispatched **MLA decode benchmark**")
    [smoke_line] = [ln for ln in text.splitlines() if "(B200) V1 Attention**" in ln]
    assert smoke_line.startswith("- 🔵 selected")
    [line] = [p for p in section.data["problems"] if "needs the step" in p]
    assert line.startswith(
        "MLA decode benchmark needs the step `prbot-attention-benchmark-b200` in the "
        "repository's pipeline (none of its step files has it): copy prbot's "
        "`deploy/gpu-bench/buildkite-step.yaml` into one of them with its key set to "
        f"`prbot-attention-benchmark-b200` and its agents on a {bench['hardware']} queue"
    )
    # The file named is the one prbot ships, and it is a step that runs prbot's paired job.
    shipped = Path(__file__).resolve().parents[1] / jobs_check.BENCHMARK_STEP_FILE
    [step] = yaml.safe_load(shipped.read_text())["steps"]
    assert "key" in step and "bench run" in "\n".join(step["commands"])
    assert set(step["artifact_paths"]) >= {"bench/base/*", "bench/head/*"}


def test_with_no_job_chosen_a_broken_step_file_warns_in_the_status_line(make_repo) -> None:
    # Skipped sections carry no fold (on main this problem sat in the fold of a skip); it
    # warns, in the status line.
    repo = make_repo("vllm")
    base = repo.commit({**BASE, ".buildkite/test_areas/broken.yaml": "steps: ["}, "base")
    head = repo.commit({"setup.py": "# a change no GPU job follows\n"})
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    assert section.findings == []
    assert section.status == "warn"
    assert section.summary == (
        "no GPU job needed; `.buildkite/test_areas/broken.yaml` is not valid YAML (line 1)"
    )


def test_sparse_and_dense_backends_go_to_their_own_config_and_incumbents(make_repo):
    # 0.27.1 -> 0.33.0 put the sparse FLASH_ATTN_MLA_SPARSE_FA4 on the dense mla_decode.yaml
    # and measured it against FLASHINFER_MLA and TOKENSPEED_MLA: cuda.py's one list holds
    # both kinds, and the selector keeps the kind a model asks for.
    enum = "AttentionBackendEnum"
    priorities = PRIORITIES.replace(
        f"{enum}.TRITON_MLA,\n",
        f"{enum}.TRITON_MLA,\n                {enum}.FLASHMLA_SPARSE,\n"
        f"                {enum}.FAST_MLA_SPARSE,\n",
    )
    sparse = backend("capability.major == 10").replace("FastMLABackend", "FastMLASparseBackend")
    registry = (
        REGISTRY
        + NEW_MEMBER
        + (
            '    FAST_MLA_SPARSE = "vllm.v1.attention.backends.mla.fast_mla_sparse.'
            'FastMLASparseBackend"\n'
        )
    )
    repo = make_repo("vllm")
    base = repo.commit({**BASE, "vllm/platforms/cuda.py": priorities}, "base")
    head = repo.commit(
        {
            "vllm/v1/attention/backends/mla/fast_mla.py": backend("capability.major == 10"),
            "vllm/v1/attention/backends/mla/fast_mla_sparse.py": sparse,
            "vllm/v1/attention/backends/registry.py": registry,
        }
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    found = by_name(run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None))
    dense, sparse_job = found["MLA decode benchmark"], found["MLA sparse decode benchmark"]
    assert (dense["backends"], dense["against"]) == (["FAST_MLA"], ["FLASHINFER_MLA"])
    assert dense["config"].endswith("/mla_decode.yaml")
    assert (sparse_job["backends"], sparse_job["against"]) == (
        ["FAST_MLA_SPARSE"],
        ["FLASHMLA_SPARSE"],
    )
    assert sparse_job["config"].endswith("/mla_sparse_decode.yaml")


PREFILL_REGISTRY = """from enum import Enum


class MLAPrefillBackendEnum(Enum):
    FLASH_ATTN = "vllm.v1.attention.backends.mla.prefill.flash_attn.FlashAttnPrefillBackend"
    NEW_PREFILL = "vllm.v1.attention.backends.mla.prefill.new_prefill.NewPrefillBackend"
"""


def test_a_member_is_at_base_only_if_its_own_enum_had_it(make_repo):
    # 0.20.2 -> 0.21.0 added the whole MLA prefill registry, FLASH_ATTN and FLASHINFER
    # included; the attention enum's FLASH_ATTN at base made prbot plan a base-vs-head
    # comparison of a prefill backend the base does not have.
    repo = make_repo("vllm")
    base = repo.commit(BASE, "base")
    prefill = "vllm/v1/attention/backends/mla/prefill/"
    head = repo.commit(
        {
            prefill + "registry.py": PREFILL_REGISTRY,
            prefill + "flash_attn.py": "class FlashAttnPrefillBackend:\n    pass\n",
            prefill + "new_prefill.py": "class NewPrefillBackend:\n    pass\n",
        }
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    found = by_name(run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None))
    bench = found["MLA prefill benchmark"]
    assert bench["compare"] == "backends"
    assert bench["new_backends"] == ["FLASH_ATTN", "NEW_PREFILL"]


def test_a_step_this_pr_moves_to_another_device_says_where_the_head_runs_it(make_repo) -> None:
    # 0.23.0 -> 0.26.0 moved the AMD mirror of V1 attention from mi300_1 to mi325_1: the step
    # is chosen at base (a PR cannot choose its jobs), but the head's build runs it on the
    # head's device, and the line must say so.
    repo = make_repo("vllm")
    base = repo.commit(BASE, "base")
    head = repo.commit(
        {
            ".buildkite/test_areas/attention.yaml": STEPS.replace("mi300_1", "mi325_1"),
            "tests/v1/attention/test_attention_backends.py": "def test_it():\n    pass\n",
        }
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    found = {f["step_key"]: f for f in section.findings}
    mirror = found["v1-attention-h100-mi300-amd"]
    assert mirror["hardware"] == "mi300_1" and mirror["head_hardware"] == "mi325_1"
    assert mirror["reason"].endswith(
        "; this PR moves the step to mi325_1, where the build of this head runs it"
    )
    # The summary names the device the head's build runs it on, not the base's.
    assert section.summary == "3 smoke tests selected on h100, mi325_1, b200-k8s"
    # A step the PR leaves where it was says nothing of the kind.
    assert "head_hardware" not in found["v1-attention-h100-mi300"]
    assert "moves the step" not in found["v1-attention-h100-mi300"]["reason"]


def test_a_step_file_over_the_size_bound_at_head_is_a_problem_line_not_an_error(
    make_repo,
) -> None:
    # A PR that adds a 9 MB step file (over the 8 MB bound) beside a moved step: that file is
    # not read, and the jobs section is still the jobs, not an error.
    repo = make_repo("vllm")
    base = repo.commit(BASE, "base")
    head = repo.commit(
        {
            ".buildkite/test_areas/attention.yaml": STEPS.replace("mi300_1", "mi325_1"),
            ".buildkite/test_areas/huge.yaml": "# pad\n" * 1_500_000,
            "tests/v1/attention/test_attention_backends.py": "def test_it():\n    pass\n",
        }
    )
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    section = run_check(jobs_check.CHECK, snapshot, rules.load_builtin("vllm"), None)
    assert section.status.value != "error", section.summary
    found = {f["step_key"]: f for f in section.findings}
    assert found["v1-attention-h100-mi300-amd"]["head_hardware"] == "mi325_1"
