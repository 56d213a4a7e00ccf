"""Recorded-shape data for the paired-benchmark tests: vLLM --output-json runs and the
nvidia-smi answers of an H200 (as benchmarks/gpu_attention_bench.py and prbot bench run
wrote them there), built here rather than copied from the GPU."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "bench"
FAKE_SMI = FIXTURES / "nvidia-smi"
FAKE_BENCHMARK = FIXTURES / "fake_benchmark.py"
UUID_A = "GPU-3f81f7ad-710f-44f4-328d-73a7754145b0"
UUID_B = "GPU-697c774d-df4c-ea21-e17d-8801d254dfda"
HEADER = (
    "name, uuid, driver_version, clocks.current.sm [MHz], clocks.current.memory [MHz], "
    "temperature.gpu\n"
)
# Mean times an H200 gave (seconds) and their run-to-run spread (sd of the log).
H200 = {
    ("FLASH_ATTN", "8q1s1k"): (60.0e-6, 0.027),
    ("CUDNN", "8q1s1k"): (45.6e-6, 0.013),
    ("FLASH_ATTN", "q2k"): (167.7e-6, 0.004),
    ("CUDNN", "q2k"): (86.5e-6, 0.005),
    ("FLASH_ATTN", "q8k"): (1.74e-3, 0.005),
    ("CUDNN", "q8k"): (0.914e-3, 0.012),
}


def machine_csv(uuid: str = UUID_A, sm: int = 1980, temperature: int = 37) -> str:
    return HEADER + f"NVIDIA H200, {uuid}, 580.159.04, {sm} MHz, 3201 MHz, {temperature}\n"


def entry(backend: str, spec: str, mean: float, error: str | None = None) -> dict:
    config = {
        "backend": backend,
        "batch_spec": spec,
        "num_layers": 1,
        "head_dim": 128,
        "num_q_heads": 32,
        "num_kv_heads": 32,
        "block_size": 16,
        "device": "cuda",
        "dtype": "torch.bfloat16",
        "use_cuda_graphs": False,
    }
    return {
        "config": config,
        "mean_time": mean,
        "median_time": mean,
        "std_time": mean * 0.01 if math.isfinite(mean) else 0.0,
        "min_time": mean,
        "max_time": mean,
        "error": error,
    }


def run_json(rng: random.Random, *, slowdown: float = 0.0, backends=("FLASH_ATTN", "CUDNN")) -> str:
    return json.dumps(
        [
            entry(backend, spec, mean * (1 + slowdown) * math.exp(rng.gauss(0, spread)))
            for (backend, spec), (mean, spread) in H200.items()
            if backend in backends
        ]
    )


def write_job(
    root: Path,
    rounds: int = 5,
    *,
    seed: int = 0,
    slowdown: float = 0.0,
    base_uuid: str = UUID_A,
    head_uuid: str | None = None,
) -> tuple[Path, Path]:
    """``root/base`` and ``root/head`` as prbot bench run leaves them."""
    rng = random.Random(seed)
    base, head = root / "base", root / "head"
    for side in (base, head):
        side.mkdir(parents=True, exist_ok=True)
    for number in range(1, rounds + 1):
        (base / f"run-{number}.json").write_text(run_json(rng))
        (head / f"run-{number}.json").write_text(run_json(rng, slowdown=slowdown))
    (base / "machine.csv").write_text(machine_csv(base_uuid, sm=345))
    (head / "machine.csv").write_text(machine_csv(head_uuid or base_uuid, sm=345))
    return base, head
