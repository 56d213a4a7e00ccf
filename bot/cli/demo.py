"""``prbot demo``: the whole webhook path on embedded defaults, printing the comment posted.

It starts the local GitHub test server with a small vLLM-shaped repository, opens a PR,
runs prbot (SQLite, real git, in-process worker), sends a signed ``pull_request.opened``,
waits for the report comment and prints it. No credentials, nothing leaves the machine
except what the checks themselves do (``uv`` resolution is switched off in the demo rules).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bot.cli.common import CliError, progress, step

REPO = "acme/vllm-lite"

# A tiny vLLM-shaped tree: requirements split by platform, an attention backend registry.
_REGISTRY = (
    "import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
    '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
    '    FLASHMLA = "vllm.v1.attention.backends.mla.flashmla.FlashMLABackend"\n'
)
BASE_FILES = {
    "README.md": "# vllm-lite\n\nA small stand-in for an inference engine.\n",
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=77", "torch==2.9.0", "wheel"]\n'
        'build-backend = "setuptools.build_meta"\n'
    ),
    "requirements/common.txt": "numpy>=1.26\nrequests>=2.26\ntransformers>=4.56\n",
    "requirements/cuda.txt": (
        "-r common.txt\n# Must be updated alongside torch in pyproject.toml\ntorch==2.9.0\n"
        'flashinfer-python==0.5.2; platform_machine == "x86_64"\n'
    ),
    "requirements/rocm.txt": "-r common.txt\ntorch==2.9.0\n",
    "requirements/cpu.txt": (
        '-r common.txt\ntorch==2.9.0; platform_machine != "s390x"\n'
        'intel-openmp==2024.2.1; platform_machine == "x86_64"\n'
    ),
    "requirements/xpu.txt": "-r common.txt\ntorch==2.9.0\n",
    "requirements/tpu.txt": "-r common.txt\n",
    "requirements/build/cuda.txt": "torch==2.9.0\nsetuptools>=77\n",
    "requirements/build/rocm.txt": "torch==2.9.0\nsetuptools>=77\n",
    "requirements/build/cpu.txt": "torch==2.9.0\nsetuptools>=77\n",
    "requirements/test/cuda.in": "-c ../cuda.txt\npytest\n",
    "requirements/test/rocm.in": "-c ../rocm.txt\npytest\n",
    "requirements/test/xpu.in": "-c ../xpu.txt\npytest\n",
    "requirements/docs.in": "mkdocs\n",
    "vllm/__init__.py": "",
    "vllm/v1/attention/backends/registry.py": _REGISTRY,
    # The CUDA platform's priority list: what a new MLA backend is benchmarked against.
    "vllm/platforms/cuda.py": (
        "def _get_backend_priorities(use_mla, device_capability):\n"
        "    if use_mla:\n"
        "        if device_capability.major == 10:\n"
        "            return [\n"
        "                AttentionBackendEnum.CUTLASS_MLA,\n"
        "                AttentionBackendEnum.FLASHINFER_MLA,\n"
        "            ]\n"
        "    return [AttentionBackendEnum.FLASH_ATTN]\n"
    ),
    # vLLM's own GPU steps (prbot picks the B200 one for a Blackwell-only backend).
    ".buildkite/test_areas/attention.yaml": (
        "group: Attention\nsteps:\n"
        '- label: ":nvidia: (H100) V1 Attention"\n  key: v1-attention-h100\n  device: h100\n'
        "  source_file_dependencies: [vllm/v1/attention, tests/v1/attention]\n"
        '- label: ":nvidia: (B200) V1 Attention"\n  key: v1-attention-b200\n  device: b200\n'
        "  source_file_dependencies: [vllm/v1/attention, tests/v1/attention]\n"
        # The benchmark step the pipeline adds for prbot (it runs only when prbot asks).
        '- label: "prbot attention benchmark (B200)"\n  key: prbot-attention-benchmark-b200\n'
        "  device: b200\n  source_file_dependencies: []\n"
    ),
    ".github/prbot.yml": (
        "extends: vllm\n"
        "features:\n"
        "  dispatch: true  # the demo dispatches to its local Buildkite; advisory is the default\n"
        "checks:\n"
        "  requirements:\n"
        "    resolve: false  # the demo stays offline; uv resolution is tested on local wheels\n"
    ),
}

_TOKENSPEED = _REGISTRY + (
    '    TOKENSPEED_MLA = "vllm.v1.attention.backends.mla.tokenspeed.TokenSpeedMLABackend"\n'
)
_BACKEND = (
    "class TokenSpeedMLABackend:\n"
    '    supported_dtypes = ["float16", "bfloat16"]\n\n'
    '    @staticmethod\n    def get_name() -> str:\n        return "TOKENSPEED_MLA"\n\n'
    "    @classmethod\n"
    "    def supports_compute_capability(cls, capability) -> bool:\n"
    "        return capability.major == 10\n"
)
# Two contributors add the same backend; the second PR's report names the first.
PULLS = [
    {
        "branch": "tokenspeed-mla",
        "title": "[Attention] Add TOKENSPEED_MLA backend",
        "body": "Adds the TokenSpeed MLA decode backend for Blackwell.",
        "author": "first-contributor",
        "files": {
            "vllm/v1/attention/backends/registry.py": _TOKENSPEED,
            "vllm/v1/attention/backends/mla/tokenspeed.py": _BACKEND,
            "requirements/cuda.txt": BASE_FILES["requirements/cuda.txt"] + "tokenspeed-mla>=0.1\n",
        },
    },
    {
        "branch": "tokenspeed-decode",
        "title": "Support TokenSpeed MLA decode kernels",
        "body": "New MLA backend using TokenSpeed kernels. Also bumps transformers.",
        "author": "second-contributor",
        "files": {
            "vllm/v1/attention/backends/registry.py": _TOKENSPEED.replace(
                "mla.tokenspeed.", "mla.tokenspeed_mla."
            ),
            "vllm/v1/attention/backends/mla/tokenspeed_mla.py": _BACKEND,
            "requirements/common.txt": "numpy>=1.26\nrequests>=2.26\ntransformers>=4.57\n",
        },
    },
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="run the webhook path end to end locally")
    parser.add_argument(
        "--keep", metavar="DIR", help="keep the demo's state (database, mirrors) in DIR"
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for the report (default 120)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.keep:
        root = Path(args.keep)
        root.mkdir(parents=True, exist_ok=True)
        return _run(root, args.timeout)
    with tempfile.TemporaryDirectory(prefix="prbot-demo-") as tmp:
        return _run(Path(tmp), args.timeout)


def _run(root: Path, timeout: float) -> int:
    from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
    from bot.core.features import permissions_for
    from bot.report.render import MARKER

    with step("starting the local GitHub test server and prbot (SQLite, in-process worker)"):
        stack = LocalStack(root / "stack", buildkite=True).start()
    try:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files=BASE_FILES)
        # The owner installed prbot from `prbot app-manifest --features dispatch`, as the
        # demo's rules switch dispatch on, and accepted what it asks for.
        gh.installations[INSTALLATION_ID].permissions = {
            name: level for name, (level, _) in permissions_for(["dispatch"]).items()
        }
        comment = None
        for spec in PULLS:
            gh.commit(REPO, spec["branch"], spec["files"], spec["title"])
            pull = gh.open_pull_request(
                REPO,
                head_branch=spec["branch"],
                title=spec["title"],
                body=spec["body"],
                author=spec["author"],
                author_association="FIRST_TIME_CONTRIBUTOR",
            )
            number = pull["number"]
            progress(
                f"opened {REPO}#{number} by {spec['author']}; sending a signed pull_request.opened"
            )
            response = stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
            progress(f"webhook answered {response.status_code} {response.text}")
            if response.status_code != 202:
                raise CliError(f"the webhook refused the delivery: {response.status_code}")

            def report_comment(number: int = number) -> dict | None:
                return next(
                    (
                        c
                        for c in gh.comments(REPO, number)
                        if MARKER in c["body"] and c["user"]["type"] == "Bot"
                    ),
                    None,
                )

            with step(f"waiting for the report on #{number}"):
                try:
                    comment = wait_for(report_comment, timeout=timeout, what="the report comment")
                except TimeoutError as exc:
                    raise CliError(str(exc)) from None
            runs = wait_for(
                lambda sha=pull["head"]["sha"]: gh.check_runs(REPO, sha),
                timeout=timeout,
                what="the check run",
            )
            progress(
                f"#{number}: comment {comment['id']} by {comment['user']['login']}, "
                f"check run {runs[0]['conclusion']}"
            )
        comment = _gpu_jobs(stack, number, timeout) or comment
        progress(f"the comment on #{number}, as GitHub stores it:")
        print(comment["body"] if comment else "")
    finally:
        stack.stop()
    return 0


def _gpu_jobs(stack, number: int, timeout: float) -> dict | None:  # noqa: ANN001
    """A maintainer approves the head (`/approve-gpu`); prbot dispatches to the local Buildkite,
    whose agents finish the jobs (one paired job per benchmark, the head 10% slower) and send
    signed webhooks."""
    from bot.cli.demo_stack import finish_gpu_jobs, wait_for
    from bot.report.render import MARKER

    gh, bk = stack.github, stack.buildkite
    gh.set_permission(REPO, "maintainer", "write")
    approval = gh.add_user_comment(REPO, number, "maintainer", "/approve-gpu")
    progress(f"#{number}: a maintainer comments /approve-gpu (approves this head's GPU jobs)")
    stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, approval))
    with step("waiting for the GPU builds on the local Buildkite"):
        try:
            wait_for(lambda: len(bk.builds) >= 2, timeout=timeout, what="the GPU builds")
            wait_for(stack.idle, timeout=timeout, what="the dispatch")
        except TimeoutError as exc:
            raise CliError(str(exc)) from None
    for build in bk.builds.values():
        keys = build.body["env"].get("VLLM_CI_ONLY_STEP_KEYS")
        progress(f"Buildkite build {build.number} at {build.body['commit'][:12]}: steps {keys}")
    finished = finish_gpu_jobs(stack, head_slowdown=1.10)
    progress(f"{finished} GPU jobs finished; their webhooks were signed and delivered")

    def with_results() -> dict | None:
        for c in gh.comments(REPO, number):
            if MARKER in c["body"] and "Head / base" in c["body"]:
                return c
        return None

    with step("waiting for the results in the comment"):
        try:
            found = wait_for(with_results, timeout=timeout, what="the benchmark table")
            wait_for(stack.idle, timeout=timeout, what="the results")
        except TimeoutError as exc:
            raise CliError(str(exc)) from None
    return next((c for c in gh.comments(REPO, number) if c["id"] == found["id"]), found)
