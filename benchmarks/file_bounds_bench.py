"""Peak memory of ``prbot check`` when a PR makes one file huge (run by hand, never in CI).

    PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/file_bounds_bench.py \
        [--pair 0.20.2 0.21.0] [--megabytes 75] [--before REV] [--write]

A real vLLM release pair (``benchmarks/vllm_releases.py``) is cloned into a temp dir. The
baseline is ``prbot check`` of the release pair as it is; the attack is the same pair with one
more commit on top that grows ``vllm/v1/attention/backends/registry.py`` to ``--megabytes``
(the real file, then a padding class of enum-like members, so every parser has work to do).
Both run in the same process tree, one after the other, under an address-space limit so a
run without bounds cannot take the machine down; the figure is the attack's peak RSS as a
ratio of the baseline's. The requirements check (uv, network) is off in both runs.

Nothing from the vLLM tree is written into this repository. Figures go to
docs/benchmarks/file_bounds.md with ``--write``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_releases  # noqa: E402 - the sibling script, not an installed module

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = "vllm/v1/attention/backends/registry.py"
# A run that ignores bounds must fail here instead of swapping the shared machine.
ADDRESS_SPACE_LIMIT = 12 * 1024**3
RULES = """\
extends: vllm
checks:
  requirements:
    enabled: false
"""


def inflate(repo: Path, megabytes: int) -> None:
    """Commit ``attack`` on top of ``head``: the registry grown to ``megabytes`` MB."""
    vllm_releases._git(repo, "checkout", "-q", "-B", "attack", "head")
    target = repo / REGISTRY
    original = target.read_text()
    line = '    PADDING_{0:08d} = "vllm.v1.attention.backends.padding.Padding{0:08d}Backend"\n'
    budget = megabytes * 1_000_000 - len(original)
    with target.open("a") as out:
        out.write("\n\nclass _Padding:\n")
        written, index = 0, 0
        while written < budget:
            chunk = "".join(line.format(i) for i in range(index, index + 10_000))
            out.write(chunk)
            written += len(chunk)
            index += 10_000
    vllm_releases._git(repo, "commit", "-q", "-am", f"grow {REGISTRY} to {megabytes} MB")


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def check_run(repo: Path, head: str, rules: Path, code: Path = ROOT) -> dict:
    """One ``prbot check`` (the ``bot`` package under ``code``) as a child process.

    Returns peak RSS (MB), seconds, and what it reported.
    """
    # prbot's own peak (RUSAGE_SELF, without its git children) is written to a side file.
    own_peak = repo.parent / f"peak-{head}-{code.name}.txt"
    wrapper = (
        "import resource, sys\n"
        "from bot.cli import main\n"
        "try:\n    code = main(sys.argv[2:])\n"
        "finally:\n    open(sys.argv[1], 'w').write("
        "str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
        "sys.exit(code)\n"
    )
    command = [sys.executable, "-c", wrapper, str(own_peak), "check", "--repo", str(repo)]
    command += ["--base", "base", "--head", head, "--rules", str(rules), "--format", "json"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            command, cwd=code, stdout=out, stderr=err, preexec_fn=_limit_address_space
        )
        # wait4 gives this child's own peak (ru_maxrss, KiB on Linux) and its waited-for
        # children's, not the bench's other children.
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    result = {
        "exit": proc.returncode,
        "seconds": seconds,
        "peak_mb": usage.ru_maxrss / 1024,
        "own_peak_mb": int(own_peak.read_text() or 0) / 1024 if own_peak.exists() else 0.0,
    }
    try:
        report = json.loads(stdout)
        result["sections"] = {
            s["check"]: (s["status"], s["summary"][:240]) for s in report["sections"]
        }
    except json.JSONDecodeError:
        result["sections"] = {}
        result["stderr"] = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return result


def run(base: str, head: str, megabytes: int, before: str | None = None) -> dict:
    source = vllm_releases.pair(base, head)
    with tempfile.TemporaryDirectory(prefix="prbot-bounds-") as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(source), str(repo)], check=True)
        vllm_releases._git(repo, "checkout", "-q", "-B", "head", "origin/head")
        vllm_releases._git(repo, "branch", "-f", "base", "origin/base")
        inflate(repo, megabytes)
        rules = Path(tmp) / "rules.yml"
        rules.write_text(RULES)
        rows = [("baseline: the release pair as is", check_run(repo, "head", rules))]
        if before:
            # The same attack against prbot's code at an older commit, from a temp worktree
            # (the child imports `bot` from its working directory first).
            old = Path(tmp) / "before"
            vllm_releases._git(ROOT, "worktree", "add", "-q", "--detach", str(old), before)
            try:
                label = f"attack, prbot at {before} (before the bounds)"
                rows.append((label, check_run(repo, "attack", rules, code=old)))
            finally:
                vllm_releases._git(ROOT, "worktree", "remove", "--force", str(old))
        rows.append((f"attack: {megabytes} MB registry.py", check_run(repo, "attack", rules)))
    return {"pair": f"{base}..{head}", "megabytes": megabytes, "before": before, "rows": rows}


def _ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}×" if baseline else "n/a"


def render(result: dict) -> str:
    rows = result["rows"]
    baseline = rows[0][1]
    before = f" --before {result['before']}" if result["before"] else ""
    lines = [
        "# File bounds: one huge file in a PR",
        "",
        "```sh",
        "PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/file_bounds_bench.py "
        f"--pair {result['pair'].replace('..', ' ')} --megabytes {result['megabytes']}"
        f"{before} --write",
        "```",
        "",
        f"Real vLLM release pair {result['pair']}; the attack adds one commit that grows "
        f"`{REGISTRY}` to {result['megabytes']} MB. `prbot check` (requirements off) runs as a "
        "child process under a 12 GiB address-space limit. prbot's peak is its own `ru_maxrss` "
        "(RUSAGE_SELF at exit); the other column is the highest of any process in its tree "
        "(`wait4`), git's diff of the huge file included. 2 cores shared with other work.",
        "",
        "| Run | prbot peak RSS | Ratio | Peak RSS of any process (git included) | Ratio "
        "| Seconds | Exit |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, row in rows:
        lines.append(
            f"| {label} | {row['own_peak_mb']:.0f} MB | "
            f"{_ratio(row['own_peak_mb'], baseline['own_peak_mb'])} | {row['peak_mb']:.0f} MB | "
            f"{_ratio(row['peak_mb'], baseline['peak_mb'])} | {row['seconds']:.1f} | "
            f"{row['exit']} |"
        )
    for label, row in rows[1:]:
        lines += ["", f"What `{label}` reported, per section:", ""]
        for check, (status, summary) in row["sections"].items():
            lines.append(f"- **{check}** ({status}): {summary}")
        if row.get("stderr"):
            lines.append(f"- no report; stderr ends: {' / '.join(row['stderr'])}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", nargs=2, default=["0.20.2", "0.21.0"], metavar="VERSION")
    parser.add_argument("--megabytes", type=int, default=75)
    parser.add_argument("--before", help="also run the attack against prbot at this commit")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks/*.md")
    args = parser.parse_args(argv)
    text = render(run(args.pair[0], args.pair[1], args.megabytes, args.before))
    print(text)
    if args.write:
        (ROOT / "docs" / "benchmarks" / "file_bounds.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
