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
BASE_FILES = {
    "README.md": "# vllm-lite\n\nA small stand-in for an inference engine.\n",
    "requirements/common.txt": "numpy>=1.26\nrequests>=2.26\ntransformers>=4.56\n",
    "requirements/cuda.txt": "-r common.txt\ntorch==2.9.0\n",
    "requirements/cpu.txt": '-r common.txt\ntorch==2.9.0; platform_machine == "x86_64"\n',
    "vllm/__init__.py": "",
    "vllm/v1/attention/backends/registry.py": (
        "import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
        '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
    ),
    ".github/prbot.yml": (
        "extends: vllm\nchecks:\n  changed_files:\n    warn_on: [requirements]\n"
    ),
}

PR_FILES = {
    "requirements/common.txt": (
        "numpy>=1.26\nrequests>=2.26\ntransformers>=4.57\nsafetensors>=0.4\n"
    ),
    "vllm/v1/attention/backends/registry.py": (
        "import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
        '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
        '    TOKENSPEED_MLA = "vllm.v1.attention.backends.mla.tokenspeed.TokenSpeedMLABackend"\n'
    ),
}


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
    from bot.demo import INSTALLATION_ID, LocalStack, wait_for
    from bot.report import MARKER

    with step("starting the local GitHub test server and prbot (SQLite, in-process worker)"):
        stack = LocalStack(root / "stack").start()
    try:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files=BASE_FILES)
        gh.commit(REPO, "tokenspeed-mla", PR_FILES, "Add TOKENSPEED_MLA backend")
        pull = gh.open_pull_request(
            REPO,
            head_branch="tokenspeed-mla",
            title="[Attention] Add TOKENSPEED_MLA backend",
            body="Adds the TokenSpeed MLA decode backend.",
            author="contributor",
            author_association="FIRST_TIME_CONTRIBUTOR",
        )
        number = pull["number"]
        progress(f"opened {REPO}#{number}; sending a signed pull_request.opened")
        response = stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        progress(f"webhook answered {response.status_code} {response.text}")
        if response.status_code != 202:
            raise CliError(f"the webhook refused the delivery: {response.status_code}")

        def report_comment():
            return next(
                (
                    c
                    for c in gh.comments(REPO, number)
                    if MARKER in c["body"] and c["user"]["type"] == "Bot"
                ),
                None,
            )

        with step("waiting for the report comment"):
            try:
                comment = wait_for(report_comment, timeout=timeout, what="the report comment")
            except TimeoutError as exc:
                raise CliError(str(exc)) from None
        runs = gh.check_runs(REPO, pull["head"]["sha"])
        progress(
            f"comment {comment['id']} by {comment['user']['login']}; "
            f"check run: {runs[0]['conclusion'] if runs else 'missing'}"
        )
        print(comment["body"])
    finally:
        stack.stop()
    return 0
