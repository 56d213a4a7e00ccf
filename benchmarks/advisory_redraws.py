"""What a vLLM-sized build's commit statuses cost prbot in advisory mode (run by hand).

    uv run python benchmarks/advisory_redraws.py [--jobs 150] [--out FILE]

A whole prbot (LocalStack: the local GitHub test server, the intake and its worker, SQLite,
the local Buildkite) with vLLM's rules, on a vLLM-shaped repository whose PR selects two
smoke steps. vLLM's Buildkite posts one commit status per job, pending then done; this
sends that as GitHub would: ``--jobs`` jobs, two of them the selected steps, each a status
and its ``status`` delivery, twice. Counted per burst: deliveries, redraw jobs queued, comment
edits and GitHub REST calls prbot made. The baseline, measured in the same run, is a redraw
per delivery: what the handlers would cost without matching the status to a selected step.
Synthetic load on local servers, not vLLM's traffic. Figures go to
docs/benchmarks/advisory_redraws.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.report.render import MARKER
from bot.store.queue import Queue

OUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "advisory_redraws.md"
REPO = "acme/vllm-lite"
STEPS = (
    "group: Attention\nsteps:\n"
    "- label: V1 attention (B200)\n  key: v1-attention-b200\n  device: b200\n"
    "  source_file_dependencies: [vllm/v1/attention]\n"
    "- label: Attention benchmarks smoke (B200)\n  key: attention-benchmarks-smoke-b200\n"
    "  device: b200\n  source_file_dependencies: [vllm/v1/attention]\n"
)
SELECTED = ("v1-attention-b200", "attention-benchmarks-smoke-b200")
REGISTRY = (
    "from enum import Enum\n\n\nclass AttentionBackendEnum(Enum):\n"
    '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
)
CHANGE = {
    "vllm/v1/attention/backends/flash_attn.py": (
        "class FlashAttentionBackend:\n    @classmethod\n"
        "    def supports_compute_capability(cls, capability) -> bool:\n"
        "        return capability.major == 10\n"
    )
}
RULES = "extends: vllm\nchecks:\n  requirements:\n    enabled: false\n"


def burst(stack, head: str, jobs: int) -> dict[str, int]:
    gh = stack.github
    queue = Queue(stack.service.engine)
    before = {j.id for j in queue.jobs(limit=100_000) if j.kind == "jobs_refresh"}
    gh.reset_calls()
    keys = [f"job-{n}" for n in range(jobs - len(SELECTED))] + list(SELECTED)
    deliveries = 0
    for state in ("pending", "success"):
        for key in keys:
            status = gh.add_status(REPO, head, f"buildkite/ci/pr/{key}", state)
            stack.deliver("status", gh.status_event(REPO, status))
            deliveries += 1
    wait_for(stack.idle, what="idle", timeout=600)
    # The redraw waits a little after the burst (coalescing): wait for it to run.
    wait_for(
        lambda: not [j for j in queue.jobs("queued", limit=1000) if j.kind == "jobs_refresh"],
        what="the redraw",
        timeout=60,
    )
    wait_for(stack.idle, what="idle", timeout=600)
    redraws = [j for j in queue.jobs(limit=100_000) if j.kind == "jobs_refresh"]
    calls = [c for c in gh.calls if ".git/" not in c.path]
    return {
        "deliveries": deliveries,
        "redraw jobs": len([j for j in redraws if j.id not in before]),
        "comment edits": sum(c.method == "PATCH" and "/issues/comments/" in c.path for c in calls),
        "REST calls": len(calls),
    }


def run(jobs: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        stack = LocalStack(Path(tmp) / "stack", default_rules="vllm", buildkite=True)
        with stack as running:
            gh = running.github
            gh.create_repo(
                REPO,
                installation_id=INSTALLATION_ID,
                files={
                    ".buildkite/test_areas/attention.yaml": STEPS,
                    "vllm/__init__.py": "",
                    "vllm/v1/attention/backends/registry.py": REGISTRY,
                    ".github/prbot.yml": RULES,
                },
            )
            head = gh.commit(REPO, "flash", CHANGE, "FA on SM100")
            number = gh.open_pull_request(REPO, head_branch="flash", title="FA")["number"]
            running.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
            wait_for(
                lambda: any(MARKER in c["body"] for c in gh.comments(REPO, number)),
                what="the report",
                timeout=300,
            )
            wait_for(running.idle, what="idle", timeout=300)
            measured = burst(running, head, jobs)
            body = next(c["body"] for c in gh.comments(REPO, number) if MARKER in c["body"])
            shown = all(f"buildkite/ci/pr/{key}" in body for key in SELECTED)
    baseline = measured["deliveries"]  # a redraw per delivery, one comment edit each at least
    lines = [
        "# Advisory redraws: a vLLM-sized build's commit statuses",
        "",
        "`uv run python benchmarks/advisory_redraws.py --jobs "
        f"{jobs}` (synthetic load on the local GitHub and Buildkite test servers, vLLM's rules;",
        "not vLLM's traffic). One build of the PR's head posts a status per job, pending then",
        f"success: {jobs} jobs, {len(SELECTED)} of them the PR's selected smoke steps.",
        "",
        "| What | Count |",
        "| --- | ---: |",
        *(f"| {k} | {v} |" for k, v in measured.items()),
        f"| baseline: a redraw per delivery | {baseline} |",
        "",
        f"Redraw jobs against the baseline: {measured['redraw jobs'] / baseline:.4f}; comment "
        f"edits against it: {measured['comment edits'] / baseline:.4f}. The selected steps' "
        f"final states are in the comment: {'yes' if shown else 'no'}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = run(max(len(SELECTED) + 1, args.jobs))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
