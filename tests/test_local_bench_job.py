"""prbot bench run's job: ABBA rounds of fresh processes on one idle GPU, its layout on disk.

Real processes throughout: the benchmark is a stand-in script writing vLLM's layout, and
nvidia-smi a script that answers as an H200 did (tests/fixtures/bench).
"""

import json
import os
import sys

import pytest

from bot.local.bench_job import JobError, Smi, abba_order, busy_reason, expand, run_job
from tests.bench_helpers import FAKE_BENCHMARK, FAKE_SMI

BENCH = f"{sys.executable} {FAKE_BENCHMARK} --output-json {{output}}"


@pytest.fixture
def smi(monkeypatch) -> Smi:
    for name in ("FAKE_APP", "FAKE_UTIL", "FAKE_GPU_UUID"):
        monkeypatch.delenv(name, raising=False)
    return Smi(str(FAKE_SMI), "0")


def test_rounds_alternate_abba() -> None:
    assert abba_order(3) == [
        (1, "base"),
        (1, "head"),
        (2, "head"),
        (2, "base"),
        (3, "base"),
        (3, "head"),
    ]


def test_placeholders_are_replaced_per_argument_never_through_a_shell() -> None:
    argv = expand(
        "docker run img:{side} bench --output-json {output} --tag 'r {round}; rm -rf /'",
        output="/o/run-2.json",
        round_number=2,
        side="head",
    )
    assert argv == [
        "docker",
        "run",
        "img:head",
        "bench",
        "--output-json",
        "/o/run-2.json",
        "--tag",
        "r 2; rm -rf /",
    ]
    with pytest.raises(JobError, match="the base command template does not split"):
        expand("bench 'unclosed", output="x", round_number=1, side="base")


def test_a_job_writes_both_sides_the_gpu_and_its_log(tmp_path, smi) -> None:
    job = run_job(
        {"base": BENCH, "head": f"{BENCH} --slowdown 0.1"}, rounds=3, out=tmp_path, smi=smi
    )
    assert job.paired_rounds() == 3
    for side in ("base", "head"):
        names = sorted(p.name for p in (tmp_path / side).iterdir())
        assert names == ["machine-end.csv", "machine.csv", "run-1.json", "run-2.json", "run-3.json"]
        assert "NVIDIA H200, GPU-3f81f7ad" in (tmp_path / side / "machine.csv").read_text()
    record = json.loads((tmp_path / "job.json").read_text())
    assert record["order"] == ["1B", "1H", "2H", "2B", "3B", "3H"]
    assert [r["exit_code"] for r in record["runs"]] == [0] * 6
    assert (tmp_path / "logs" / "head-2.log").read_text().startswith("timing")
    rows = json.loads((tmp_path / "head" / "run-1.json").read_text())
    assert rows[0]["config"]["backend"] == "FLASH_ATTN"


def test_each_run_is_told_its_side_round_and_gpu(tmp_path, smi) -> None:
    script = "import json, os, sys; json.dump([dict(os.environ)], open(sys.argv[1], 'w'))"
    template = f'{sys.executable} -c "{script}" {{output}}'
    run_job(
        {"base": template, "head": template}, rounds=1, out=tmp_path, smi=Smi(smi.executable, "3")
    )
    (env,) = json.loads((tmp_path / "head" / "run-1.json").read_text())
    assert env["PRBOT_BENCH_SIDE"] == "head" and env["PRBOT_BENCH_ROUND"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "3"


def test_failed_runs_are_recorded_and_leave_no_result(tmp_path, smi) -> None:
    job = run_job({"base": BENCH, "head": f"{BENCH} --fail"}, rounds=2, out=tmp_path, smi=smi)
    assert job.paired_rounds() == 0
    notes = {(r.round, r.side): r.note for r in job.runs}
    assert notes[(1, "head")] == "exit code 1"
    assert not (tmp_path / "head" / "run-1.json").exists()
    job = run_job(
        {"base": BENCH, "head": f"{BENCH} --no-output"}, rounds=1, out=tmp_path / "b", smi=smi
    )
    assert [r.note for r in job.runs if r.side == "head"] == ["exit code 0 but no results file"]
    job = run_job(
        {"base": BENCH, "head": "/nonexistent/bench {output}"},
        rounds=1,
        out=tmp_path / "c",
        smi=smi,
    )
    assert [r.note for r in job.runs if r.side == "head"][0].startswith("could not start")


def test_a_busy_gpu_is_refused_before_anything_runs(tmp_path, smi, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_APP", "513, python3, 1130 MiB")
    with pytest.raises(JobError) as raised:
        run_job({"base": BENCH, "head": BENCH}, rounds=2, out=tmp_path, smi=smi)
    assert str(raised.value) == (
        "GPU 0 is busy, so nothing was run: a process is using it: 513, python3, 1130 MiB"
    )
    assert raised.value.exit_code == 3 and not any(tmp_path.iterdir())
    monkeypatch.delenv("FAKE_APP")
    monkeypatch.setenv("FAKE_UTIL", "85")
    assert busy_reason(smi, max_utilization=10, sleep=lambda s: None) == (
        "it is 85% utilized (at most 10% allowed)"
    )
    monkeypatch.setenv("FAKE_UTIL", "[N/A]")
    assert busy_reason(smi, max_utilization=10, sleep=lambda s: None) is None


def test_no_nvidia_smi_no_benchmark(tmp_path) -> None:
    with pytest.raises(JobError, match="nvidia-smi-missing not found: without it the GPU"):
        run_job(
            {"base": BENCH, "head": BENCH},
            rounds=1,
            out=tmp_path,
            smi=Smi("nvidia-smi-missing", "0"),
        )
    assert os.listdir(tmp_path) == []
