"""GitHub REST calls per event, counted at the local GitHub test server.

Run by hand:  uv run python benchmarks/github_calls_bench.py

A PR is opened (cold: the App has no token, no bot login, no comment yet), pushed to twice
(steady state) and rechecked. Git traffic (fetches into the mirror) is not REST and is
listed apart. Figures go to docs/benchmarks/github_calls.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for  # noqa: E402
from bot.report.render import MARKER  # noqa: E402
from bot.runtime.metrics import endpoint_template  # noqa: E402

REPO = "acme/widgets"


def _idle(stack: LocalStack) -> bool:
    return stack.idle()


def _reported(stack: LocalStack, number: int, sha: str) -> bool:
    return any(
        MARKER in c["body"] and f"prbot:head={sha}" in c["body"]
        for c in stack.github.comments(REPO, number)
    )


def run_event(stack: LocalStack, label: str, send, done) -> tuple[str, Counter, int]:
    stack.github.reset_calls()
    send()
    wait_for(done, timeout=120, what=label)
    wait_for(lambda: _idle(stack), timeout=120, what="idle queue")
    rest = Counter()
    git = 0
    for call in stack.github.calls:
        if ".git/" in call.path:
            git += 1
        else:
            rest[f"{call.method} {endpoint_template(call.path)}"] += 1
    return label, rest, git


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, LocalStack(Path(tmp)) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        gh.commit(REPO, "feature", {"a.py": "x = 2\n"})
        number = gh.open_pull_request(REPO, head_branch="feature", title="Change a")["number"]

        def head() -> str:
            return gh.pull_request_event(REPO, number, "opened")["pull_request"]["head"]["sha"]

        rows.append(
            run_event(
                stack,
                "pull_request.opened (cold)",
                lambda: stack.deliver(
                    "pull_request", gh.pull_request_event(REPO, number, "opened")
                ),
                lambda: _reported(stack, number, head()),
            )
        )
        for i in (1, 2):
            gh.push(REPO, number, {f"b{i}.py": f"y = {i}\n"})
            rows.append(
                run_event(
                    stack,
                    f"pull_request.synchronize (steady state, push {i})",
                    lambda: stack.deliver(
                        "pull_request", gh.pull_request_event(REPO, number, "synchronize")
                    ),
                    lambda: _reported(stack, number, head()),
                )
            )
        comment = gh.add_user_comment(REPO, number, "octocat", "/recheck")
        rows.append(
            run_event(
                stack,
                "issue_comment /recheck by the author",
                lambda: stack.deliver(
                    "issue_comment", gh.issue_comment_event(REPO, number, comment)
                ),
                lambda: "rocket" in gh.reactions(REPO, comment["id"]),
            )
        )

    lines = [
        "# GitHub calls per event",
        "",
        f"`uv run python benchmarks/github_calls_bench.py`, {time.strftime('%Y-%m-%d')}: "
        "calls counted at the local GitHub test server.",
        "",
        "| Event | REST calls | Which | Git requests (mirror fetch) |",
        "| --- | ---: | --- | ---: |",
    ]
    for label, rest, git in rows:
        which = "; ".join(f"{name} ×{count}" for name, count in sorted(rest.items()))
        lines.append(f"| {label} | {sum(rest.values())} | {which} | {git} |")
    lines += ["", "Target: ≤ 3 REST calls per steady-state `synchronize`.", ""]
    out = ROOT / "docs" / "benchmarks" / "github_calls.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
