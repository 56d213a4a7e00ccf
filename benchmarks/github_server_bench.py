"""What one call to the local GitHub test server costs, beside floors measured in the same run.

Run by hand:  uv run python benchmarks/github_server_bench.py [--repeat 50] [--write]

REST calls go through PyGithub's requester (as prbot makes them) with pacing off. The floor
for REST is a bare uvicorn app answering a fixed JSON body to the same client; a second bare
app on a socket without TCP_NODELAY shows what the server's explicit IPPROTO_TCP socket saves.
The floor for git is the same clone/fetch from the bare repository's path, with no HTTP.
Figures (medians, ms) go to docs/benchmarks/github_server.md with --write.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import uvicorn
from github import Auth, Github

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.local.git import auth_env  # noqa: E402
from bot.testing import FakeGitHub  # noqa: E402

REPO = "acme/widgets"
NO_PACING = {"seconds_between_requests": None, "seconds_between_writes": None, "retry": None}


async def bare_app(scope, receive, send) -> None:  # noqa: ANN001 - ASGI
    if scope["type"] != "http":
        return
    body = b'{"login": "octocat", "id": 1}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"29")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BareServer:
    """The floor: uvicorn with nothing behind it, optionally on a socket asyncio won't NODELAY."""

    def __init__(self, *, nodelay: bool) -> None:
        proto = socket.IPPROTO_TCP if nodelay else 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(bare_app, lifespan="off", log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> BareServer:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join()
        self.sock.close()


def median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm: token minted, connection open, caches filled
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return 1000 * statistics.median(samples)


def git(*args: str, token: str | None = None, cwd: Path | None = None) -> None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **auth_env(token)}
    subprocess.run(["git", *args], env=env, cwd=cwd, check=True, capture_output=True)


def build_state(gh: FakeGitHub) -> tuple[int, int]:
    gh.add_installation(1, "acme")
    files = {f"vllm/module_{i}.py": f"def f{i}(x):\n    return x\n" for i in range(20)}
    gh.create_repo(REPO, installation_id=1, files=files)
    changed = {f"vllm/module_{i}.py": f"def f{i}(x):\n    return {i} * x\n" for i in range(20)}
    gh.commit(REPO, "feature", changed)
    number = gh.open_pull_request(REPO, head_branch="feature", title="Scale")["number"]
    for i in range(2, 22):
        gh.commit(REPO, f"other{i}", {f"docs/page{i}.md": "text\n"})
        gh.open_pull_request(REPO, head_branch=f"other{i}", title=f"Docs {i}")
    comment = gh.add_user_comment(REPO, number, "alice", "first")
    for i in range(34):
        gh.add_user_comment(REPO, number, "bob", f"comment {i}")
    return number, comment["id"]


def measure(repeat: int) -> list[tuple[str, float, float]]:
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp, FakeGitHub(root=Path(tmp) / "gh") as gh:
        number, comment_id = build_state(gh)
        auth = Auth.AppAuth(gh.app_id, gh.private_key_pem).get_installation_auth(1)
        client = Github(auth=auth, base_url=gh.url, **NO_PACING)
        requester = client.requester
        with BareServer(nodelay=True) as bare, BareServer(nodelay=False) as nagle:
            bare_client = Github(auth=Auth.Token("x"), base_url=bare.url, **NO_PACING).requester
            nagle_client = Github(auth=Auth.Token("x"), base_url=nagle.url, **NO_PACING)
            floor = median_ms(lambda: bare_client.requestJsonAndCheck("GET", "/x"), repeat)
            slow = median_ms(
                lambda: nagle_client.requester.requestJsonAndCheck("GET", "/x"), repeat
            )
        rows.append(("bare uvicorn without TCP_NODELAY (GET)", slow, floor))
        api = f"/repos/{REPO}"
        aliases = " ".join(
            f"pr{n}: pullRequest(number: {n}) {{ number title body createdAt headRefOid "
            f"author {{ login }} files(first: 100) {{ nodes {{ path additions deletions }} }} }}"
            for n in range(1, 21)
        )
        query = f'query {{ repository(owner: "acme", name: "widgets") {{ {aliases} }} }}'
        calls: list[tuple[str, Callable[[], object]]] = [
            ("GET repository", lambda: requester.requestJsonAndCheck("GET", api)),
            ("GET pull request", lambda: requester.requestJsonAndCheck("GET", f"{api}/pulls/1")),
            (
                "GET pull files (20 files)",
                lambda: requester.requestJsonAndCheck("GET", f"{api}/pulls/1/files"),
            ),
            (
                "GET open pulls (21, one page)",
                lambda: requester.requestJsonAndCheck("GET", f"{api}/pulls", {"per_page": 100}),
            ),
            (
                "list 35 comments (2 pages)",
                lambda: list(client.get_repo(REPO, lazy=True).get_issue(number).get_comments()),
            ),
            (
                "POST comment",
                lambda: requester.requestJsonAndCheck(
                    "POST", f"{api}/issues/{number}/comments", input={"body": "report"}
                ),
            ),
            (
                "PATCH comment",
                lambda: requester.requestJsonAndCheck(
                    "PATCH", f"{api}/issues/comments/{comment_id}", input={"body": "edited"}
                ),
            ),
            (
                "GraphQL, 20 aliased pull requests",
                lambda: requester.graphql_query(query, {}),
            ),
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            for name, call in calls:
                rows.append((name, median_ms(call, repeat), floor))

        token = gh.create_installation_token(1)
        bare_path = gh.root / "acme" / "widgets.git"
        work = Path(tmp)
        counter = iter(range(10_000))

        def clone_http() -> None:
            git(
                "clone",
                "-q",
                "--bare",
                gh.git_url(REPO),
                str(work / f"h{next(counter)}"),
                token=token,
            )

        def clone_local() -> None:
            git(
                "clone",
                "-q",
                "--bare",
                "--no-local",
                str(bare_path),
                str(work / f"l{next(counter)}"),
            )

        git_repeat = max(5, repeat // 5)
        rows.append(
            ("git clone", median_ms(clone_http, git_repeat), median_ms(clone_local, git_repeat))
        )
        mirror = work / "mirror.git"
        git("init", "-q", "--bare", str(mirror))
        ref = f"+refs/pull/{number}/head:refs/pr"

        def fetch_http() -> None:
            git("fetch", "-q", gh.git_url(REPO), ref, cwd=mirror, token=token)

        def fetch_local() -> None:
            git("fetch", "-q", "--no-write-fetch-head", str(bare_path), ref, cwd=mirror)

        rows.append(
            (
                "git fetch refs/pull/N/head (up to date)",
                median_ms(fetch_http, git_repeat),
                median_ms(fetch_local, git_repeat),
            )
        )
    return rows


def render(rows: list[tuple[str, float, float]], repeat: int) -> str:
    lines = [
        "# Local GitHub test server",
        "",
        f"`uv run python benchmarks/github_server_bench.py --repeat {repeat} --write` "
        "(median per call, ms). REST calls go through PyGithub's requester with pacing off; "
        "the REST floor is a bare uvicorn app returning a fixed JSON body to the same client, "
        "and the first row is that same bare app on a socket asyncio leaves without "
        "TCP_NODELAY. The git floor is the same clone/fetch from the bare repository's path "
        "(`--no-local`, so objects are packed as over the wire). Ratio = server / floor.",
        "",
        "| operation | server ms | floor ms | ratio |",
        "|---|---|---|---|",
    ]
    for name, value, floor in rows:
        lines.append(f"| {name} | {value:.2f} | {floor:.2f} | {value / floor:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks/...")
    args = parser.parse_args()
    text = render(measure(args.repeat), args.repeat)
    print(text)
    if args.write:
        target = ROOT / "docs" / "benchmarks" / "github_server.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


if __name__ == "__main__":
    main()
