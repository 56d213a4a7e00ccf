"""prbot bench compare / run as commands: JSON and Markdown out, one line and exit 2 on a
usage error, exit 3 when the GPU is busy."""

import json
import sys

import pytest

from bot.cli import main
from tests.bench_helpers import FAKE_BENCHMARK, FAKE_SMI, UUID_B, write_job

CONTRACT = {
    "config",
    "base",
    "head",
    "ratio",
    "low",
    "high",
    "verdict",
    "p_value",
    "runs",
    "reason",
}


def test_compare_prints_the_contract_as_json(tmp_path, capsys) -> None:
    base, head = write_job(tmp_path, seed=3, slowdown=0.10)
    assert main(["bench", "compare", str(base), str(head)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(CONTRACT <= set(row) for row in rows)
    by = {row["config"]: row for row in rows}
    assert by["CUDNN q2k"]["verdict"] == "regression"
    assert by["CUDNN q2k"]["runs"] == [5, 5]
    assert by["CUDNN q2k"]["low"] < by["CUDNN q2k"]["ratio"] < by["CUDNN q2k"]["high"]


def test_compare_as_markdown_says_what_against_what_on_which_gpu(tmp_path, capsys) -> None:
    base, head = write_job(tmp_path, seed=3, slowdown=0.10, head_uuid=UUID_B)
    assert main(["bench", "compare", str(base), str(head), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "head: CUDNN, FLASH\\_ATTN on NVIDIA H200 GPU-697c774d; base: CUDNN, FLASH\\_ATTN on "
        "NVIDIA H200 GPU-3f81f7ad; 5 paired rounds, ABBA"
    )
    assert "| CUDNN q2k |" in out and "🟡 inconclusive" in out and "🔴" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--factor", "5"], "--factor must be between 0 and 1 (0.05 is 5%)"),
        (["--alpha", "0"], "--alpha must be between 0 and 0.5"),
    ],
)
def test_bad_options_are_one_line(tmp_path, capsys, args, message) -> None:
    base, head = write_job(tmp_path)
    assert main(["bench", "compare", str(base), str(head), *args]) == 2
    assert capsys.readouterr().err.strip() == f"prbot: error: {message}"


def test_a_missing_directory_is_one_line(tmp_path, capsys) -> None:
    assert main(["bench", "compare", str(tmp_path / "nope"), str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"prbot: error: {tmp_path / 'nope'}: not a directory"


def test_a_huge_results_file_is_read_only_to_its_limit(tmp_path, capsys) -> None:
    base, head = write_job(tmp_path, rounds=3)
    with (head / "run-2.json").open("wb") as big:
        big.truncate(100_000_000)  # sparse: 100 MB on the reader's side, not on disk
    assert main(["bench", "compare", str(base), str(head)]) == 0
    captured = capsys.readouterr()
    assert "head/run-2.json: over 20 MB" in captured.err
    assert {row["runs"][0] for row in json.loads(captured.out)} == {2}


def test_run_then_compare_on_the_job_directory(tmp_path, capsys, monkeypatch) -> None:
    for name in ("FAKE_APP", "FAKE_UTIL"):
        monkeypatch.delenv(name, raising=False)
    bench = f"{sys.executable} {FAKE_BENCHMARK} --output-json {{output}}"
    code = main(
        [
            "bench", "run", "--nvidia-smi", str(FAKE_SMI), "--rounds", "3",
            "--base", bench, "--head", f"{bench} --slowdown 0.1", "--out", str(tmp_path),
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0
    assert "prbot: round 2 head: ok" in captured.err
    assert "3 paired rounds, ABBA" in captured.out and "🔴 regression" in captured.out
    monkeypatch.setenv("FAKE_APP", "77, vllm, 60000 MiB")
    code = main(
        ["bench", "run", "--nvidia-smi", str(FAKE_SMI), "--base", bench, "--head", bench,
         "--out", str(tmp_path / "again")]
    )  # fmt: skip
    assert code == 3
    assert capsys.readouterr().err.strip().startswith("prbot: error: GPU 0 is busy")
