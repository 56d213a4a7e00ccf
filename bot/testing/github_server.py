"""A local GitHub for tests and `prbot demo`, like Prow's fakegithub but over real HTTP.

PyGithub talks to it exactly as to api.github.com (base_url = server.url), and git clones and
fetches `refs/pull/N/head` from `<url>/<owner>/<repo>.git`. Tests set up state with the methods
below, build webhook payloads for it, observe what the bot did, inject faults, and park requests
with `hold()` until they `release()` them (to put two jobs in a chosen order without sleeping):

    with FakeGitHub() as gh:
        gh.add_installation(1, "acme")
        gh.create_repo("acme/widgets", installation_id=1, files={"a.py": "x = 1\n"})
        gh.commit("acme/widgets", "feature", {"a.py": "x = 2\n"})
        pr = gh.open_pull_request("acme/widgets", head_branch="feature", title="Change a")
        payload = gh.pull_request_event("acme/widgets", pr["number"], "opened")
        ...  # deliver payload to prbot; it calls back with PyGithub (base_url=gh.url)
        assert gh.comments("acme/widgets", pr["number"])[0]["user"]["type"] == "Bot"

Clients should turn off PyGithub's pacing (seconds_between_requests/_writes=None), or every
write waits a second.
"""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn

from bot.testing import webhooks
from bot.testing.app_hooks import HookDelivery, HookSender
from bot.testing.auth import generate_private_key_pem, mint_installation_token, public_key_pem
from bot.testing.bare_repo import BareRepo
from bot.testing.payloads import Shapes
from bot.testing.server_app import ServerApp
from bot.testing.state import (
    CheckRun,
    Comment,
    FakeRepo,
    IdSource,
    Installation,
    PullRequest,
    Token,
    now_iso,
)
from bot.testing.statuses_api import add_status
from bot.testing.traffic import Call, Hold, Traffic

ROLES = ("admin", "maintain", "write", "triage", "read", "none")
_STARTUP_TIMEOUT = 15.0


class FakeGitHub:
    """GitHub's REST subset, GraphQL query and git smart HTTP for one App, on 127.0.0.1."""

    def __init__(
        self,
        *,
        app_id: int = 1,
        app_slug: str = "prbot",
        private_key_pem: str | None = None,
        root: Path | None = None,
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.bot_login = f"{app_slug}[bot]"
        self.private_key_pem = private_key_pem or generate_private_key_pem()
        self.public_key_pem = public_key_pem(self.private_key_pem)
        self._tmp = None if root else tempfile.TemporaryDirectory(prefix="fakegithub-")
        self.root = Path(root) if root else Path(self._tmp.name)  # type: ignore[union-attr]
        self.root.mkdir(parents=True, exist_ok=True)
        # Bind now so the address (written into every URL) is known before start(). The explicit
        # IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say so, and without
        # it every response waits ~40 ms for a delayed ACK.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.shapes = Shapes(self.url, app_id=app_id, app_slug=app_slug)
        self.lock = threading.RLock()
        self.installations: dict[int, Installation] = {}
        self.repos: dict[str, FakeRepo] = {}
        self.tokens: dict[str, Token] = {}
        self.traffic = Traffic()
        self.calls: list[Call] = self.traffic.calls  # every answered request, for assertions
        self.ids = IdSource(1_000_001)
        self._repo_ids = IdSource(500_001)
        # Every token and JWT a client presented, so a test can look for them in logs.
        self.seen_credentials: set[str] = set()
        self.hook = HookSender(self)  # the App's webhook: its URL, secret and deliveries
        self._server: uvicorn.Server | None = None
        # GitHub Actions' runs (bot.testing.actions_api.ActionsState), set once started.
        self.actions: Any = None
        self.teams: dict[tuple[str, str], set[str]] = {}  # (org, team slug) -> members
        self._app: ServerApp | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle
    def start(self) -> FakeGitHub:
        """Serve on the bound port from a background thread; returns once it accepts requests."""
        self._app = ServerApp(self)
        config = uvicorn.Config(
            self._app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"fakegithub-{self.url}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + _STARTUP_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the GitHub test server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            assert self._app is not None
            self._app.release_delays()
            self.traffic.release_holds()
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self.hook.close()
        self._server = self._thread = None
        self._socket.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- state set-up
    def add_installation(self, installation_id: int, account: str) -> dict:
        with self.lock:
            inst = Installation(id=installation_id, account=account)
            self.installations[installation_id] = inst
            return self.shapes.installation(inst, self._repos_of(installation_id))

    def create_repo(
        self,
        full_name: str,
        *,
        installation_id: int,
        default_branch: str = "main",
        files: dict[str, str] | None = None,
    ) -> FakeRepo:
        """A bare repository with one initial commit on `default_branch`."""
        owner, _, name = full_name.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"repository name must be owner/name, got {full_name!r}")
        with self.lock:
            if installation_id not in self.installations:
                raise ValueError(f"no installation {installation_id}; call add_installation first")
            if full_name in self.repos:
                raise ValueError(f"repository {full_name} already exists")
            git = BareRepo(self.root / owner / f"{name}.git")
            git.init(default_branch)
            repo = FakeRepo(
                id=self._repo_ids(),
                owner=owner,
                name=name,
                installation_id=installation_id,
                default_branch=default_branch,
                git=git,
            )
            initial = files if files is not None else {"README.md": f"# {name}\n"}
            git.commit_files(
                default_branch, dict(initial), message="Initial commit", author=owner, parent=None
            )
            self.repos[full_name] = repo
            return repo

    def commit(
        self,
        full_name: str,
        branch: str,
        files: dict[str, str | None],
        message: str = "change",
        author: str = "octocat",
    ) -> str:
        """Write (None deletes) files on `branch`, branching from the default branch if new."""
        with self.lock:
            repo = self._repo(full_name)
            parent = repo.branch_sha(branch) or repo.branch_sha(repo.default_branch)
            return repo.git.commit_files(
                branch, files, message=message, author=author, parent=parent
            )

    def open_pull_request(
        self,
        full_name: str,
        *,
        head_branch: str,
        title: str,
        body: str | None = None,
        author: str = "octocat",
        author_association: str = "CONTRIBUTOR",
        base_branch: str | None = None,
        number: int | None = None,
        draft: bool = False,
        fork_owner: str | None = None,
        maintainer_can_modify: bool = False,
    ) -> dict:
        """Open a PR from an existing branch; sets refs/pull/<n>/head. Returns the REST object.

        With `fork_owner` the PR reads as coming from that user's fork (head.repo, head.label);
        its commits still live in this repository's storage, reachable as refs/pull/<n>/head.
        """
        with self.lock:
            repo = self._repo(full_name)
            head_sha = repo.branch_sha(head_branch)
            if head_sha is None:
                raise ValueError(f"{full_name} has no branch {head_branch!r}")
            number = number if number is not None else repo.next_number()
            if number in repo.pulls:
                raise ValueError(f"{full_name} already has pull request #{number}")
            pr = PullRequest(
                number=number,
                id=self.ids(),
                title=title,
                body=body,
                author=author,
                author_association=author_association,
                head_branch=head_branch,
                base_branch=base_branch or repo.default_branch,
                head_sha=head_sha,
                draft=draft,
                fork_owner=fork_owner,
                maintainer_can_modify=maintainer_can_modify,
            )
            repo.pulls[number] = pr
            repo.git.set_ref(f"refs/pull/{number}/head", head_sha)
            return self.shapes.pull(repo, pr, repo.pull_diff(pr))

    def push(
        self, full_name: str, number: int, files: dict[str, str | None], message: str = "push"
    ) -> str:
        """A new commit on the PR's head branch; refs/pull/<n>/head follows. Returns the SHA."""
        with self.lock:
            repo = self._repo(full_name)
            pr = self._pull(repo, number)
            sha = repo.git.commit_files(
                pr.head_branch, files, message=message, author=pr.author, parent=pr.head_sha
            )
            pr.head_history.append(pr.head_sha)
            pr.head_sha = sha
            pr.updated_at = now_iso()
            repo.git.set_ref(f"refs/pull/{number}/head", sha)
            return sha

    def git_storage(self, owner: str, name: str) -> tuple[FakeRepo, str | None] | None:
        """The repository git serves at ``owner/name``: a repository, or (with the fork's
        owner) the upstream holding a PR's fork, whose commits live in its storage."""
        with self.lock:  # the event loop asks while tests add repositories and PRs
            repo = self.repos.get(f"{owner}/{name}")
            if repo is not None:
                return repo, None
            for upstream in self.repos.values():
                if upstream.name == name and any(
                    p.fork_owner == owner for p in upstream.pulls.values()
                ):
                    return upstream, owner
            return None

    def fork_allows_push(self, repo: FakeRepo, fork_owner: str) -> bool:
        with self.lock:
            return any(
                p.fork_owner == fork_owner and p.state == "open" and p.maintainer_can_modify
                for p in repo.pulls.values()
            )

    def after_push(self, full_name: str) -> None:
        """A push over git moved branches: PRs on them follow, as on GitHub (a new head, its
        ``refs/pull/<n>/head``), and each moved branch is recorded in ``pushes``."""
        with self.lock:
            repo = self._repo(full_name)
            repo.git.forget_refs()
            for pr in repo.pulls.values():
                sha = repo.branch_sha(pr.head_branch)
                if pr.state != "open" or sha is None or sha == pr.head_sha:
                    continue
                repo.pushes.append((pr.head_branch, pr.head_sha, sha))
                pr.head_history.append(pr.head_sha)
                pr.head_sha = sha
                pr.updated_at = now_iso()
                repo.git.set_ref(f"refs/pull/{pr.number}/head", sha)

    def pushes(self, full_name: str) -> list[tuple[str, str, str]]:
        """Every (branch, old head, new head) a client pushed to a PR's branch, in order."""
        with self.lock:
            return list(self._repo(full_name).pushes)

    def close_pull_request(self, full_name: str, number: int) -> None:
        with self.lock:
            pr = self._pull(self._repo(full_name), number)
            pr.state = "closed"
            pr.closed_at = pr.updated_at = now_iso()

    def reopen_pull_request(self, full_name: str, number: int) -> None:
        with self.lock:
            pr = self._pull(self._repo(full_name), number)
            pr.state = "open"
            pr.closed_at = None
            pr.updated_at = now_iso()

    def edit_pull_request(
        self,
        full_name: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        draft: bool | None = None,
    ) -> None:
        """Change title/body (remembered as the `changes` of the next edited event) or draft."""
        with self.lock:
            pr = self._pull(self._repo(full_name), number)
            pr.changes = {}
            if title is not None and title != pr.title:
                pr.changes["title"], pr.title = pr.title, title
            if body is not None and body != pr.body:
                pr.changes["body"], pr.body = pr.body, body
            if draft is not None:
                pr.draft = draft
            pr.updated_at = now_iso()

    def add_label(self, full_name: str, number: int, name: str) -> None:
        """Put a label on the PR (as someone did on GitHub); the labeled event is separate."""
        with self.lock:
            pr = self._pull(self._repo(full_name), number)
            if name not in pr.labels:
                pr.labels.append(name)

    def add_review(self, full_name: str, number: int, user: str, state: str = "APPROVED") -> None:
        """A submitted review of the PR's current head (APPROVED, CHANGES_REQUESTED, ...)."""
        with self.lock:
            pr = self._pull(self._repo(full_name), number)
            review = {
                "id": 7_000_000 + sum(len(p.reviews) for p in self._repo(full_name).pulls.values()),
                "user": user,
                "state": state,
                "commit_id": pr.head_sha,
                "submitted_at": now_iso(),
            }
            pr.reviews.append(review)

    def add_status(
        self,
        full_name: str,
        sha: str,
        context: str,
        state: str,
        *,
        target_url: str | None = None,
        description: str | None = None,
    ) -> dict:
        """A commit status another app posted (POST …/statuses/{sha} does the same)."""
        with self.lock:
            return add_status(
                self._repo(full_name),
                sha,
                context,
                state,
                target_url=target_url,
                description=description,
            )

    def add_foreign_check_run(
        self,
        full_name: str,
        sha: str,
        name: str,
        *,
        status: str = "completed",
        conclusion: str | None = "success",
        app_slug: str = "other-ci",
        details_url: str | None = None,
    ) -> int:
        """A check run another GitHub App made on the commit."""
        with self.lock:
            repo = self._repo(full_name)
            run_id = self.ids()
            app = {**self.shapes.app(), "id": 9_000 + len(app_slug), "slug": app_slug}
            app["name"] = app_slug
            repo.check_runs[run_id] = CheckRun(
                run_id,
                name,
                sha,
                status=status,
                conclusion=conclusion if status == "completed" else None,
                details_url=details_url,
                app=app,
            )
            return run_id

    def set_permission(self, full_name: str, login: str, permission: str) -> None:
        if permission not in ROLES:
            raise ValueError(f"permission must be one of {', '.join(ROLES)}")
        with self.lock:
            self._repo(full_name).permissions[login] = permission

    def add_user_comment(
        self,
        full_name: str,
        number: int,
        author: str,
        body: str,
        *,
        author_association: str | None = None,
    ) -> dict:
        """A human's comment on the PR (association derived from permission unless given)."""
        with self.lock:
            repo = self._repo(full_name)
            self._pull(repo, number)
            comment = Comment(
                id=self.ids(),
                number=number,
                author=author,
                is_bot=False,
                body=body,
                author_association=author_association or repo.association_of(author),
            )
            repo.comments[comment.id] = comment
            return self.shapes.comment(repo, comment)

    def edit_user_comment(self, full_name: str, comment_id: int, body: str) -> dict:
        with self.lock:
            repo = self._repo(full_name)
            comment = repo.comments[comment_id]
            comment.previous_body, comment.body = comment.body, body
            comment.updated_at = now_iso()
            return self.shapes.comment(repo, comment)

    def create_installation_token(self, installation_id: int) -> str:
        """Mint a live token directly (for git over HTTP without going through the app JWT)."""
        with self.lock:
            if installation_id not in self.installations:
                raise ValueError(f"no installation {installation_id}")
            token = mint_installation_token(installation_id)
            self.tokens[token.value] = token
            return token.value

    def expire_tokens(self, token: str | None = None) -> None:
        """Expire one installation token (or all), to test that clients mint new ones."""
        with self.lock:
            past = datetime.now(UTC) - timedelta(seconds=1)
            for value, live in self.tokens.items():
                if token is None or value == token:
                    live.expires_at = past

    def git_url(self, full_name: str) -> str:
        return f"{self.url}/{full_name}.git"

    # --- webhook payload builders
    def pull_request_event(
        self, full_name: str, number: int, action: str, *, label: str | None = None
    ) -> dict:
        with self.lock:
            repo = self._repo(full_name)
            pr = self._pull(repo, number)
            return webhooks.pull_request_event(self.shapes, repo, pr, action, label=label)

    def issue_comment_event(
        self, full_name: str, number: int, comment: dict, action: str = "created"
    ) -> dict:
        with self.lock:
            repo = self._repo(full_name)
            pr = self._pull(repo, number)
            stored = repo.comments.get(comment["id"])
            if stored is None:
                raise ValueError(f"no comment {comment['id']} in {full_name}")
            return webhooks.issue_comment_event(self.shapes, repo, pr, stored, action)

    def status_event(self, full_name: str, status: dict) -> dict:
        """The `status` delivery GitHub sends for a status ``add_status`` returned."""
        with self.lock:
            return webhooks.status_event(self.shapes, self._repo(full_name), status)

    def check_run_event(
        self,
        full_name: str,
        run_id: int,
        action: str = "rerequested",
        *,
        sender: str = "octocat",
        identifier: str | None = None,
    ) -> dict:
        """A check_run delivery for one of the bot's runs (Re-run, or a requested action)."""
        with self.lock:
            repo = self._repo(full_name)
            run = repo.check_runs[run_id]
            return webhooks.check_run_event(
                self.shapes, repo, run, action, sender, identifier=identifier
            )

    def check_suite_event(
        self, full_name: str, run_id: int, action: str = "rerequested", *, sender: str = "octocat"
    ) -> dict:
        """A check_suite delivery for the suite holding ``run_id``."""
        with self.lock:
            repo = self._repo(full_name)
            return webhooks.check_suite_event(
                self.shapes, repo, repo.check_runs[run_id], action, sender
            )

    def installation_event(self, installation_id: int, action: str = "created") -> dict:
        with self.lock:
            inst = self.installations[installation_id]
            repos = self._repos_of(installation_id)
            return webhooks.installation_event(self.shapes, inst, repos, action)

    def ping_event(self) -> dict:
        return webhooks.ping_event(self.shapes)

    # --- the App's webhook (bot/testing/app_hooks.py)
    def configure_hook(self, url: str, secret: str) -> None:
        """Where the App's webhook points and the secret it signs with."""
        self.hook.configure(url, secret)

    def send_webhook(self, event: str, payload: dict, *, guid: str | None = None) -> HookDelivery:
        """Deliver a payload as GitHub does (signed, recorded with prbot's answer)."""
        return self.hook.send(event, payload, guid=guid)

    def hook_deliveries(self) -> list[HookDelivery]:
        with self.lock:
            return list(self.hook.deliveries)

    # --- observation
    def reset_calls(self) -> None:
        self.traffic.reset()

    def count_calls(self, method: str | None = None, path_prefix: str | None = None) -> int:
        return self.traffic.count_calls(method, path_prefix)

    def count_arrivals(self, method: str | None = None, path_prefix: str | None = None) -> int:
        """Like count_calls, but also counts requests still in flight (held by a delay)."""
        return self.traffic.count_arrivals(method, path_prefix)

    def comments(self, full_name: str, number: int) -> list[dict]:
        with self.lock:
            repo = self._repo(full_name)
            found = sorted(
                (c for c in repo.comments.values() if c.number == number), key=lambda c: c.id
            )
            return [self.shapes.comment(repo, c) for c in found]

    def check_run_annotations(self, full_name: str, run_id: int) -> list[dict]:
        """Every annotation GitHub holds for one check run, in the order they were sent."""
        with self.lock:
            return [dict(a) for a in self._repo(full_name).check_runs[run_id].annotations]

    def check_run_history(self, full_name: str, run_id: int) -> list[str]:
        """The statuses one check run went through, e.g. ['in_progress', 'completed']."""
        with self.lock:
            return list(self._repo(full_name).check_runs[run_id].history)

    def check_runs(self, full_name: str, head_sha: str | None = None) -> list[dict]:
        with self.lock:
            repo = self._repo(full_name)
            runs = sorted(repo.check_runs.values(), key=lambda r: r.id)
            return [
                self.shapes.check_run(repo, r)
                for r in runs
                if head_sha is None or r.head_sha == head_sha
            ]

    def reactions(self, full_name: str, comment_id: int) -> list[str]:
        with self.lock:
            repo = self._repo(full_name)
            return [r.content for r in repo.reactions if r.comment_id == comment_id]

    # --- fault injection
    def inject(
        self,
        method: str,
        path_regex: str,
        *,
        delay: float = 0.0,
        status: int | None = None,
        times: int = 1,
        after_effect: bool = False,
        message: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Delay and/or fail (with a GitHub error body) the next `times` matching requests.

        after_effect=True lets the request take effect first, then delays or fails the answer.
        `message` and `headers` shape the failure, e.g. a rate limit with Retry-After.
        """
        self.traffic.inject(
            method,
            path_regex,
            delay=delay,
            status=status,
            times=times,
            after_effect=after_effect,
            message=message,
            headers=headers,
        )

    def hold(
        self,
        method: str,
        path_regex: str,
        *,
        times: int | None = 1,
        after_effect: bool = False,
        limit: float = 60.0,
    ) -> Hold:
        """Park the next `times` matching requests (all, with None) until `release()`.

        Orders a race without sleeping: hold the older job's request, let the newer one
        finish, then release. `wait_until_held()` returns once the request is parked;
        after_effect=True parks it after it took effect, before the answer (REST only).
        `with gh.hold(...) as hold:` releases on exit; stop() releases everything.
        """
        return self.traffic.hold(
            method, path_regex, times=times, after_effect=after_effect, limit=limit
        )

    def chaos(self, rate: float, seed: int, kinds: tuple[str, ...] | None = None, **options):
        """Fail a random share ``rate`` of REST calls (bot/testing/chaos.py); 0 turns it off.
        Returns the Chaos, whose ``injected`` counts the faults by kind."""
        from bot.testing.chaos import FAULTS, Chaos

        chaos = Chaos(rate, seed, tuple(kinds or FAULTS), **options) if rate > 0 else None
        self.traffic.chaos = chaos
        return chaos

    def clear_injections(self) -> None:
        self.traffic.clear_injections()

    def pending_injections(self) -> int:
        """How many injected faults are still waiting for a matching request."""
        return len(self.traffic.pending_injections())

    @property
    def _injections(self) -> list:
        # Early callers polled this list; pending_injections() is the supported spelling.
        return self.traffic.pending_injections()

    # --- helpers
    def _repo(self, full_name: str) -> FakeRepo:
        repo = self.repos.get(full_name)
        if repo is None:
            raise KeyError(f"no repository {full_name}; call create_repo first")
        return repo

    def _pull(self, repo: FakeRepo, number: int) -> PullRequest:
        pr = repo.pulls.get(number)
        if pr is None:
            raise KeyError(f"{repo.full_name} has no pull request #{number}")
        return pr

    def _repos_of(self, installation_id: int) -> list[FakeRepo]:
        return [r for r in self.repos.values() if r.installation_id == installation_id]
