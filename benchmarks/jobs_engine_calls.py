"""CI engine calls per PR event, end to end over HTTP (run by hand).

    uv run python benchmarks/jobs_engine_calls.py [--out FILE]

A whole prbot (LocalStack: the local GitHub test server, the intake and its worker, SQLite)
with the local Buildkite, on a vLLM-shaped repository whose PR adds a Blackwell-only MLA
backend: it needs one B200 smoke build and one benchmark job (``prbot bench run``: base and
head alternately on one GPU, the new backend against the incumbent the CUDA priority list
picks; the repository's pipeline has prbot's benchmark step). Each
row is one event, delivered as GitHub or Buildkite would, and counts the Buildkite API calls
prbot made for it: builds created (target: one per selected build, none on a replay) and
reads (job states, artifact lists, downloads). Figures go to docs/benchmarks/jobs_engine_calls.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, finish_gpu_jobs, wait_for

OUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "jobs_engine_calls.md"
REPO = "acme/vllm-lite"
STEPS = (
    "group: Attention\nsteps:\n"
    "- label: (H100) V1 Attention\n  key: v1-attention-h100\n  device: h100\n"
    "  source_file_dependencies: [vllm/v1/attention]\n"
    "- label: (B200) V1 Attention\n  key: v1-attention-b200\n  device: b200\n"
    "  source_file_dependencies: [vllm/v1/attention]\n"
    "- label: prbot attention benchmark (B200)\n  key: prbot-attention-benchmark-b200\n"
    "  device: b200\n  source_file_dependencies: []\n"
)
# The platform's priority list at SM100: FLASHMLA is picked ahead of the new FAST_MLA.
PRIORITIES = (
    "def _get_backend_priorities(use_mla, device_capability):\n"
    "    if use_mla:\n"
    "        if device_capability.major == 10:\n"
    "            return [AttentionBackendEnum.FLASHMLA, AttentionBackendEnum.FAST_MLA]\n"
    "    return [AttentionBackendEnum.FLASH_ATTN]\n"
)
REGISTRY = (
    "from enum import Enum\n\n\nclass AttentionBackendEnum(Enum):\n"
    '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
)
BACKEND = (
    "class FastMLABackend:\n    @classmethod\n"
    "    def supports_compute_capability(cls, capability) -> bool:\n"
    "        return capability.major == 10\n"
)
CHANGE = {
    "vllm/v1/attention/backends/registry.py": REGISTRY
    + '    FAST_MLA = "vllm.v1.attention.backends.mla.fast_mla.FastMLABackend"\n',
    "vllm/v1/attention/backends/mla/fast_mla.py": BACKEND,
}
RULES = "extends: vllm\nfeatures:\n  dispatch: true\nchecks:\n  requirements:\n    enabled: false\n"


class Counter:
    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.rows: list[tuple[str, int, int, str]] = []
        self.mark()

    def mark(self) -> None:
        bk = self.stack.buildkite
        self.creates = bk.count_calls("POST", "/builds")
        self.total = bk.count_calls()

    def row(self, event: str, expected: str) -> None:
        wait_for(self.stack.idle, timeout=120, what="an idle queue")
        bk = self.stack.buildkite
        creates = bk.count_calls("POST", "/builds") - self.creates
        reads = bk.count_calls() - self.total - creates
        self.rows.append((event, creates, reads, expected))
        self.mark()


def deliver_pull(stack: LocalStack, number: int, action: str, guid: str | None = None) -> None:
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, action), guid=guid)


def say(stack: LocalStack, number: int, login: str, text: str, guid: str | None = None) -> None:
    note = stack.github.add_user_comment(REPO, number, login, text)
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, note), guid=guid)


def open_pr(stack: LocalStack, branch: str, association: str) -> int:
    stack.github.commit(REPO, branch, CHANGE, "add FAST_MLA")
    pull = stack.github.open_pull_request(
        REPO,
        head_branch=branch,
        title="[Attention] FAST_MLA",
        author="dev",
        author_association=association,
    )
    return pull["number"]


def measure(root: Path) -> list[tuple[str, int, int, str]]:
    with LocalStack(root, default_rules="vllm", buildkite=True) as stack:
        gh, bk = stack.github, stack.buildkite
        gh.create_repo(
            REPO,
            installation_id=INSTALLATION_ID,
            files={
                ".buildkite/test_areas/attention.yaml": STEPS,
                "vllm/__init__.py": "",
                "vllm/v1/attention/backends/registry.py": REGISTRY,
                "vllm/platforms/cuda.py": PRIORITIES,
                ".github/prbot.yml": RULES,
            },
        )
        gh.set_permission(REPO, "maintainer", "write")
        count = Counter(stack)

        number = open_pr(stack, "fast-mla", "MEMBER")
        guid = str(uuid.uuid4())
        deliver_pull(stack, number, "opened", guid)
        wait_for(lambda: len(bk.builds) == 2, timeout=120, what="the builds")
        count.row("trusted PR opened (a smoke build and one benchmark job)", "2")
        deliver_pull(stack, number, "opened", guid)
        count.row("the same delivery redelivered (same GUID)", "0")
        deliver_pull(stack, number, "opened")
        count.row("the same event under a new GUID (a replay past the intake)", "0")
        finish_gpu_jobs(stack, head_slowdown=1.0)
        wait_for(lambda: all(j.state == "passed" for b in bk.builds.values() for j in b.jobs))
        count.row("2 jobs finish (job.finished + build.finished each)", "0")
        with bk.lock:
            delivered = [(b.number, j.step_key) for b in bk.builds.values() for j in b.jobs]
        for build_number, step in delivered:
            build = bk.builds[build_number]
            payload = {
                "event": "job.finished",
                "build": build.to_json(bk.url + bk.pipeline_path, f"{bk.url}/web"),
                "job": {"id": build.jobs[0].id, "state": "passed", "step_key": step},
            }
            bk.deliver("job.finished", payload)
        count.row("every job.finished webhook replayed", "0")
        say(stack, number, "maintainer", "/recheck")
        count.row("/recheck, nothing failed", "0")
        say(stack, number, "maintainer", "/recheck all")
        count.row("/recheck all", "2")

        gh.push(REPO, number, {"vllm/v1/attention/backends/mla/fast_mla.py": BACKEND + "# 2\n"})
        deliver_pull(stack, number, "synchronize")
        count.row("a push (synchronize): the new head's builds", "2")
        finish_gpu_jobs(stack, head_slowdown=1.0)
        count.row("the rerun's and the new head's 4 jobs finish", "0")

        other = open_pr(stack, "fast-mla-2", "CONTRIBUTOR")
        deliver_pull(stack, other, "opened")
        count.row("untrusted PR opened", "0")
        say(stack, other, "dev", "/recheck")
        count.row("its author's /recheck", "0")
        guid = str(uuid.uuid4())
        say(stack, other, "maintainer", "/approve-gpu", guid)
        count.row("a maintainer's /approve-gpu (no base run is reused: one job per benchmark)", "2")
        return count.rows


def render(rows: list[tuple[str, int, int, str]]) -> str:
    lines = [
        "# CI engine calls per PR event",
        "",
        "Rerun: `uv run python benchmarks/jobs_engine_calls.py`",
        "",
        "One prbot (local GitHub test server, intake, worker, SQLite) with the local Buildkite;"
        " a PR adding a Blackwell-only MLA backend selects a B200 smoke step and the MLA decode"
        " benchmark, one job (`prbot bench run`: the new backend and its incumbent alternately"
        " on one GPU, 10 rounds). Each row is one event and the Buildkite API calls prbot made"
        " for it. *Reads* are job states, artifact lists and artifact downloads: a finished"
        " benchmark job's artifacts are one file per run and side plus each side's machine.csv,"
        " each download 2 requests (Buildkite answers with a redirect to its storage). The one"
        " read of an event that runs the pipeline is prbot listing the repository's own builds"
        " of the head (what they ran is reported from them, not built again).",
        "",
        "| Event | Builds created | Target | Reads |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {event} | {creates} | {target} | {reads} |" for event, creates, reads, target in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="prbot-bench-jobs-") as tmp:
        rows = measure(Path(tmp))
    text = render(rows)
    args.out.write_text(text)
    print(text)
    missed = [row for row in rows if str(row[1]) != row[3]]
    for event, creates, _, target in missed:
        print(f"off target: {event}: {creates} created, target {target}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
