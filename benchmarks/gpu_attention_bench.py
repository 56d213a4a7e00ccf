"""A real attention-kernel benchmark for ``prbot bench run``: PyTorch SDPA on a GPU.

One process times PyTorch's scaled-dot-product attention kernels (flash, cuDNN, memory
efficient, math) over decode and prefill batch specs in vLLM's notation (``8q1s1k``: eight
one-token decodes over 1k tokens of context; ``q2k``: one 2k-token causal prefill), and writes
vLLM's ``benchmark.py --output-json`` layout: a list of ``{config, mean_time, median_time,
std_time, min_time, max_time, ..., error}`` with times in seconds.

``--slowdown F`` plants a slowdown: inside the timed region, after each kernel, a GPU spin
kernel (``torch.cuda._sleep``) runs, sized so that the measured time is ``1 + F`` times the
kernel's own time in this process (measured, launch cost included: ``_planted``). It is
extra GPU work, not a sleep on the host. Each entry then says what it planted
(``planted_cycles``, ``planted_ratio_in_process``, ``planted_ok``).

Timing is vLLM's: ``triton.testing.do_bench`` (CUDA events, L2 flushed between calls) with
``return_mode="all"``. Without a GPU (``--device cpu``, for trying the plumbing on a laptop)
the shapes shrink and the clock is ``time.perf_counter``; those numbers mean nothing.

    python3 benchmarks/gpu_attention_bench.py --output-json run.json [--slowdown 0.05]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time

DEFAULT_SPECS = "8q1s1k,32q1s4k,16q1s8k,q2k,4q2k,q8k"
BACKENDS = {
    "FLASH_ATTN": "FLASH_ATTENTION",
    "CUDNN": "CUDNN_ATTENTION",
    "EFFICIENT": "EFFICIENT_ATTENTION",
    "MATH": "MATH",
}
DEFAULT_BACKENDS = "FLASH_ATTN,CUDNN,EFFICIENT"
_SEGMENT = re.compile(r"^(?:(\d+))?q(\d+)(k?)(?:s(\d+)(k?))?$")


def parse_batch_spec(spec: str) -> list[tuple[int, int]]:
    """vLLM's grammar: ``[count]q<len>[k][s<len>[k]]`` segments joined by ``_``."""
    requests: list[tuple[int, int]] = []
    for segment in spec.split("_"):
        match = _SEGMENT.match(segment)
        if match is None:
            raise ValueError(f"invalid batch spec segment {segment!r}")
        count = int(match.group(1) or 1)
        q_len = int(match.group(2)) * (1024 if match.group(3) else 1)
        kv_len = int(match.group(4)) * (1024 if match.group(5) else 1) if match.group(4) else q_len
        requests.extend([(q_len, kv_len)] * count)
    return requests


def _shapes(spec: str, cpu: bool) -> tuple[int, int, int]:
    requests = parse_batch_spec(spec)
    if len(set(requests)) != 1:
        raise ValueError(f"{spec}: this benchmark times uniform batches only")
    q_len, kv_len = requests[0]
    if cpu:  # the plumbing only: shapes a laptop runs in milliseconds
        return len(requests), max(1, q_len // 64), max(1, kv_len // 64)
    return len(requests), q_len, kv_len


def _timer(torch, device: str):
    if device == "cuda":
        import triton.testing

        def bench(fn) -> list[float]:
            return [
                t / 1e3 for t in triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="all")
            ]

        return bench

    def bench_cpu(fn) -> list[float]:
        fn()
        times = []
        for _ in range(20):
            started = time.perf_counter()
            fn()
            times.append(time.perf_counter() - started)
        return times

    return bench_cpu


def _spin(torch, device: str):
    """``spin(cycles)``: a GPU kernel that keeps one multiprocessor busy for ``cycles`` SM
    clock cycles (``torch.cuda._sleep``); on the CPU, a busy loop of ``cycles`` nanoseconds.
    Its rate (cycles per second) is read where it is used (``_spin_rate``): the clock moves
    with load."""
    if device != "cuda":

        def spin_cpu(cycles: int) -> None:
            end = time.perf_counter_ns() + cycles
            while time.perf_counter_ns() < end:
                pass

        return spin_cpu

    def spin(cycles: int) -> None:
        torch.cuda._sleep(max(1, int(cycles)))

    spin(RATE_CYCLES)  # loads the kernel
    return spin


# Passes of the timer per configuration before the timed one, on both sides alike: a
# kernel's time moves over its first passes (seen on an H200: up to 7% between the first
# and the third), so both sides time the same, settled, pass; the head's passes before it
# are its calibration of the planted work.
PASSES_BEFORE = 5
WARM_PASSES = 2  # of those, before the head measures the kernel's own time
RATE_CYCLES = 200_000  # a spin long enough (about 0.1 ms) to read the clock rate by events


def _spin_rate(torch, spin) -> float:
    """Cycles per second of the spin now (the SM clock moves with load)."""
    if spin.__name__ == "spin_cpu":
        return 1e9
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for _ in range(3):
        start.record()
        spin(RATE_CYCLES)
        end.record()
        end.synchronize()
        rates.append(RATE_CYCLES / (start.elapsed_time(end) / 1e3))
    return statistics.median(rates)


def _planted(bench, spin, rate_now, attention, slowdown: float) -> tuple[list[float], dict]:
    """Times of ``attention`` plus planted GPU work sized so that the measured time is
    ``1 + slowdown`` times the kernel's own, as measured in this process.

    The extra work is a second launch after the kernel, inside the timed region. It costs
    ``launch + cycles / rate``: the rate (the SM clock under load) is read by events on the
    spin alone, and the launch's own cost (on launch-bound kernels more than the whole
    planted share) from one probe, the kernel with a spin of a first-guess length, against
    the kernel's own time measured before and after it (so a drift over the passes cancels).
    Where the launch alone costs more than the target, the slowdown cannot be planted this
    way: the entry says so (``planted_ok`` false) and its real ratio is what the runs show."""
    for _ in range(WARM_PASSES):
        bench(attention)

    def slowed_by(cycles: int):
        def slowed() -> None:
            attention()
            spin(cycles)

        return slowed

    before = statistics.fmean(bench(attention))
    rate = rate_now()
    probe = max(2, int(slowdown * before * rate))
    at_probe = statistics.fmean(bench(slowed_by(probe)))
    after = statistics.fmean(bench(attention))
    own = (before + after) / 2
    launch = at_probe - own - probe / rate
    wanted = slowdown * own - launch
    planted_ok = wanted > 0
    cycles = max(1, int(wanted * rate)) if planted_ok else 1
    times = bench(slowed_by(cycles))
    return times, {
        "planted_slowdown": slowdown,
        "planted_cycles": cycles,
        "planted_ok": planted_ok,
        # In this process: the launch's own share, and what the timed pass got.
        "planted_launch_ratio": 1 + launch / own,
        "planted_ratio_in_process": statistics.fmean(times) / own,
        "own_drift": after / before,
    }


def _time_one(bench, spin, rate_now, attention, slowdown: float) -> tuple[list[float], dict]:
    """Times of ``attention`` (plus the planted work, inside the timed region), from the
    pass after ``PASSES_BEFORE`` on both sides."""
    if spin is None:
        for _ in range(PASSES_BEFORE):
            bench(attention)
        return bench(attention), {}
    return _planted(bench, spin, rate_now, attention, slowdown)


def _error_text(exc: Exception) -> str:
    first = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"


def run(args: argparse.Namespace) -> list[dict]:
    import functools

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device; pass --device cpu to try the plumbing")
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    bench = _timer(torch, device)
    spin = _spin(torch, device) if args.slowdown > 0 else None
    rate_now = functools.partial(_spin_rate, torch, spin)
    generator = torch.Generator(device=device).manual_seed(args.seed)
    heads, dim = args.num_heads, args.head_dim
    results = []
    for spec in args.batch_specs.split(","):
        batch, q_len, kv_len = _shapes(spec, device == "cpu")
        q, k, v = (
            torch.randn(batch, heads, n, dim, device=device, dtype=dtype, generator=generator)
            for n in (q_len, kv_len, kv_len)
        )
        causal = q_len == kv_len and q_len > 1
        attention = functools.partial(scaled_dot_product_attention, q, k, v, is_causal=causal)
        for backend in args.backends.split(","):
            config = {
                "backend": backend,
                "batch_spec": spec,
                "num_layers": 1,
                "head_dim": dim,
                "num_q_heads": heads,
                "num_kv_heads": heads,
                "block_size": 16,
                "device": device,
                "dtype": str(dtype),
                "use_cuda_graphs": False,
            }
            entry: dict = {"config": config, "error": None}
            try:
                # The backend is chosen outside the timed region: entering the context on
                # every call would time host work the kernel does not do.
                with sdpa_kernel(getattr(SDPBackend, BACKENDS[backend])):
                    times, planted = _time_one(bench, spin, rate_now, attention, args.slowdown)
                entry.update(
                    mean_time=statistics.fmean(times),
                    median_time=statistics.median(times),
                    std_time=statistics.pstdev(times),
                    min_time=min(times),
                    max_time=max(times),
                    throughput_tokens_per_sec=batch * q_len / statistics.fmean(times),
                    **planted,
                )
            except Exception as exc:  # a backend that cannot run this shape
                entry.update(
                    mean_time=math.inf,
                    median_time=math.inf,
                    std_time=0.0,
                    min_time=math.inf,
                    max_time=math.inf,
                    error=_error_text(exc),
                )
            if device == "cuda":
                entry["memory_allocated_mb"] = torch.cuda.memory_allocated() / 2**20
                entry["memory_reserved_mb"] = torch.cuda.memory_reserved() / 2**20
            results.append(entry)
        del q, k, v, attention
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-json", required=True)
    parser.add_argument("--backends", default=DEFAULT_BACKENDS)
    parser.add_argument("--batch-specs", default=DEFAULT_SPECS)
    parser.add_argument("--num-heads", type=int, default=32)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--slowdown", type=float, default=0.0, help="planted: 0.05 is 5%%")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = run(args)
    with open(args.output_json, "w") as out:
        json.dump(results, out, indent=1)
    failed = [
        r["config"]["backend"] + " " + r["config"]["batch_spec"] for r in results if r["error"]
    ]
    print(f"{len(results)} configurations, {len(failed)} failed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
