"""The GitHub edge: App authentication and the handful of REST calls prbot makes.

PyGithub does the HTTP (with its own retry for rate limits and 5xx). Objects are built
lazily from URLs, as PyGithub does itself, so each operation costs exactly the calls it
names. Everything here blocks; callers keep it off the event loop.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import github
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry
from github.CheckRun import CheckRun
from github.Commit import Commit
from github.IssueComment import IssueComment

from bot.runtime.metrics import count_github_retry, install_github_call_counter
from bot.runtime.settings import Settings

log = logging.getLogger(__name__)

CHECK_RUN_NAME = "prbot"
# How long a process trusts the installation's permissions it read (a grant accepted since
# shows after this, or at once in the process that took GitHub's new_permissions_accepted).
PERMISSIONS_TTL = 600.0
PER_PAGE = 100  # GitHub's largest page
_NEXT_LINK = re.compile(r'<([^<>]+)>\s*;\s*rel="next"')
READ_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class RawAnswer:
    """A GitHub answer as it came (status, ETag, body), for callers that judge it themselves."""

    status: int
    etag: str | None
    body: str


def _header(headers: dict[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


# The fields the open-PR index keeps of a PR, and its first 100 files (GraphQL's page limit).
_PULL_FILES_FIELDS = (
    "number title body createdAt headRefOid author { login } "
    "files(first: 100) { nodes { path additions deletions } }"
)


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_sha: str
    base_sha: str
    state: str
    author: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class HeadChecks:
    """Other apps' CI of a head as GitHub shows it (REST shapes); ``cut``: more were left."""

    check_runs: tuple[dict, ...]
    statuses: tuple[dict, ...]
    cut: bool


def _next_link(header: str | None) -> str | None:
    found = _NEXT_LINK.search(header or "")
    return found.group(1) if found else None


class CountedRetry(GithubRetry):
    """PyGithub's retry (rate limits honoured, backoff), each retry counted in /metrics.

    Reads are retried on 5xx and rate limits. A write is retried only on a rate limit that
    says when to come back (403 or 429 with Retry-After): GitHub refused it without acting,
    so sending it again cannot double it. Any other failure of a write may have come after
    the effect, and is the job's to retry (its effect records find what the first try made).
    """

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method.upper() not in READ_METHODS:
            return bool(self.total) and has_retry_after and status_code in (403, 429)
        return super().is_retry(method, status_code, has_retry_after)

    def increment(self, method=None, url=None, response=None, error=None, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN204
        retry = super().increment(method, url, response, error, *args, **kwargs)
        count_github_retry(method, url, getattr(response, "status", None), error)
        return retry  # (when retries are used up, super() raised: nothing was counted)


@dataclass(frozen=True)
class HookPage:
    status: int  # 200, or 304 when the conditional request found nothing new
    body: str
    link: str | None
    etag: str | None


class GitHubApp:
    """One App: a JWT signer plus a cached client per installation."""

    def __init__(self, settings: Settings) -> None:
        settings.require_app()
        install_github_call_counter()
        self._base_url = settings.github_api_url
        self._timeout = int(settings.github_timeout)
        self._pacing = {
            "seconds_between_requests": settings.github_request_interval or None,
            "seconds_between_writes": settings.github_write_interval or None,
        }
        self._app_auth = Auth.AppAuth(int(settings.app_id or 0), settings.private_key())
        self._clients: dict[int, InstallationClient] = {}
        # installation id -> (when read, its permissions), see installation_permissions.
        self._granted: dict[int, tuple[float, dict[str, str]]] = {}
        self._lock = threading.Lock()
        self._bot_login: str | None = None

    def _retry(self) -> GithubRetry:
        # PyGithub retries POST too; a read timeout may come after GitHub already created
        # the comment, so never resend on read errors. The job-level effect records recover.
        # Nor on a status for a write: a 502 may come after GitHub created the comment (or
        # appended the annotations), so writes are retried by the job, whose effect records
        # find what the first try made. Reads are retried here.
        return CountedRetry(total=5, backoff_factor=0.5, read=0, allowed_methods=READ_METHODS)

    def _integration(self) -> GithubIntegration:
        return GithubIntegration(
            auth=self._app_auth,
            base_url=self._base_url,
            retry=self._retry(),
            timeout=self._timeout,
            **self._pacing,
        )

    def bot_login(self) -> str:
        """'<slug>[bot]', the author of our comments (one GET /app per process)."""
        if self._bot_login is None:
            self._bot_login = f"{self._integration().get_app().slug}[bot]"
        return self._bot_login

    def hook_deliveries(self, url: str | None = None, etag: str | None = None) -> HookPage:
        """One page of the App's webhook attempts, newest first (``url``: a next link).
        With ``etag``, a page unchanged since is a 304 (free against the rate limit)."""
        headers = {"If-None-Match": etag} if etag else {}
        requester = self._integration().requester
        if url is None:
            status, response_headers, body = requester.requestJson(
                "GET", "/app/hook/deliveries", parameters={"per_page": 100}, headers=headers
            )
        else:
            status, response_headers, body = requester.requestJson("GET", url, headers=headers)
        found = {k.lower(): v for k, v in response_headers.items()}
        if status not in (200, 304):
            raise GithubException(status, body, response_headers)
        return HookPage(status, body if status == 200 else "", found.get("link"), found.get("etag"))

    def redeliver(self, delivery_id: int) -> None:
        """Ask GitHub to send one attempt again (same GUID); it answers 202 and sends later."""
        self._integration().requester.requestJsonAndCheck(
            "POST", f"/app/hook/deliveries/{int(delivery_id)}/attempts"
        )

    def installation_permissions(self, installation_id: int) -> dict[str, str] | None:
        """What the installation's owner granted (``GET /app/installations/{id}``, as the
        App): a token keeps the permissions it was minted with until it expires, so a grant
        accepted since is only seen here. Read at most once per ``PERMISSIONS_TTL`` seconds
        per process (a report is not worth a call), and again at once after
        :meth:`forget_permissions`. None when GitHub does not say."""
        now = time.monotonic()
        with self._lock:
            cached = self._granted.get(installation_id)
        if cached is not None and now - cached[0] < PERMISSIONS_TTL:
            return cached[1]
        try:
            found = self._integration().get_app_installation(int(installation_id))
            permissions = found.raw_data.get("permissions")
        except GithubException as exc:
            log.info("installation %s: permissions not read (%s)", installation_id, exc.status)
            return None
        if not isinstance(permissions, dict):
            return None
        granted = {str(k): str(v) for k, v in permissions.items()}
        with self._lock:
            self._granted[installation_id] = (now, granted)
        return granted

    def forget_permissions(self, installation_id: int) -> None:
        """Read the installation's permissions again next time (its owner accepted new ones:
        GitHub's ``installation`` event, ``new_permissions_accepted``)."""
        with self._lock:
            self._granted.pop(installation_id, None)

    def installation(self, installation_id: int) -> InstallationClient:
        with self._lock:
            client = self._clients.get(installation_id)
            if client is None:
                auth = self._app_auth.get_installation_auth(installation_id)
                gh = Github(
                    auth=auth,
                    base_url=self._base_url,
                    retry=self._retry(),
                    timeout=self._timeout,
                    lazy=True,
                    **self._pacing,
                )
                client = InstallationClient(
                    gh,
                    auth,
                    lambda: self.installation_permissions(installation_id),
                    bot_login=self.bot_login,
                )
                # Fetch the token now, under the lock: threads sharing this client would
                # otherwise each ask for one on their first request.
                client.token()
                self._clients[installation_id] = client
            return client


class InstallationClient:
    """REST operations on behalf of one installation. The token is cached until near expiry."""

    def __init__(
        self,
        gh: Github,
        auth: Auth.AppInstallationAuth,
        permissions: Callable[[], dict[str, str] | None] | None = None,
        *,
        bot_login: Callable[[], str] | None = None,
    ) -> None:
        self.gh = gh
        self._auth = auth
        self._permissions = permissions
        self._lock = threading.Lock()
        self._bot_login = bot_login

    def bot_login(self) -> str | None:
        """'<slug>[bot]': who GitHub says acted when this installation's token did (the
        author of prbot's comments, the ``actor`` of a workflow run prbot dispatched)."""
        return self._bot_login() if self._bot_login is not None else None

    def token(self) -> str:
        with self._lock:  # refresh at most once when several jobs race
            return self._auth.token

    def granted(self) -> dict[str, str] | None:
        """The permissions the installation's owner granted (GitHub's installation object),
        or None when they are not known (a client made without the App)."""
        return self._permissions() if self._permissions is not None else None

    def _repo(self, full_name: str):  # noqa: ANN202 - PyGithub Repository
        return self.gh.get_repo(full_name)

    def get_pull(self, full_name: str, number: int) -> PullInfo:
        pull = self._repo(full_name).get_pull(number)
        raw = pull.raw_data
        return PullInfo(
            number,
            raw["head"]["sha"],
            raw["base"]["sha"],
            raw["state"],
            (raw.get("user") or {}).get("login", ""),
            raw,
        )

    def pull_reviews(self, full_name: str, number: int, *, limit: int = 300) -> list[dict]:
        """The PR's submitted reviews, oldest first, at most ``limit`` (3 pages of 100)."""
        found = []
        for review in self._repo(full_name).get_pull(number).get_reviews():
            found.append(review.raw_data)
            if len(found) >= limit:
                break
        return found

    def head_checks(self, full_name: str, sha: str, *, max_pages: int = 3) -> HeadChecks:
        """Every app's check runs of the commit and its combined status's statuses (the
        latest per context), newest first, at most ``max_pages`` pages of 100 each.
        GithubException when GitHub refuses."""
        base = f"/repos/{full_name}/commits/{quote(sha, safe='')}"
        runs, runs_cut = self._pages(f"{base}/check-runs", "check_runs", max_pages)
        statuses, statuses_cut = self._pages(f"{base}/status", "statuses", max_pages)
        return HeadChecks(tuple(runs), tuple(statuses), runs_cut or statuses_cut)

    def _pages(self, url: str, key: str, max_pages: int) -> tuple[list[dict], bool]:
        """The ``key`` lists of up to ``max_pages`` pages, and whether more were left."""
        found: list[dict] = []
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        next_url: str | None = url
        pages = 0
        while next_url is not None and pages < max_pages:
            headers, data = self.gh.requester.requestJsonAndCheck(
                "GET", next_url, parameters=params
            )
            params = None  # the next link carries every parameter
            pages += 1
            items = data.get(key) if isinstance(data, dict) else None
            found += [item for item in items or [] if isinstance(item, dict)]
            next_url = _next_link(_header(headers, "Link"))
        return found, next_url is not None

    def create_comment(self, full_name: str, number: int, body: str) -> int:
        return self._repo(full_name).get_issue(number).create_comment(body).id

    def edit_comment(self, full_name: str, comment_id: int, body: str) -> bool:
        """Edit in place; False when the comment no longer exists (someone deleted it)."""
        repo = self._repo(full_name)
        comment = IssueComment(repo._requester, url=f"{repo.url}/issues/comments/{comment_id}")
        try:
            comment.edit(body)
        except GithubException as exc:
            if exc.status in (404, 410):
                return False
            raise
        return True

    def find_comment(self, full_name: str, number: int, marker: str, author: str) -> int | None:
        """Our sticky comment: the first one carrying the marker and written by the bot."""
        for comment in self._repo(full_name).get_issue(number).get_comments():
            if comment.user.login == author and marker in (comment.body or ""):
                return comment.id
        return None

    def create_check_run(self, full_name: str, head_sha: str, **fields: Any) -> int:
        return (
            self._repo(full_name)
            .create_check_run(name=CHECK_RUN_NAME, head_sha=head_sha, **fields)
            .id
        )

    def update_check_run(self, full_name: str, check_run_id: int, **fields: Any) -> None:
        repo = self._repo(full_name)
        CheckRun(repo._requester, url=f"{repo.url}/check-runs/{check_run_id}").edit(**fields)

    def find_check_run(self, full_name: str, head_sha: str) -> int | None:
        repo = self._repo(full_name)
        commit = Commit(repo._requester, url=f"{repo.url}/commits/{head_sha}")
        for run in commit.get_check_runs(check_name=CHECK_RUN_NAME):
            return run.id
        return None

    def add_reaction(self, full_name: str, comment_id: int, content: str) -> None:
        repo = self._repo(full_name)
        IssueComment(
            repo._requester, url=f"{repo.url}/issues/comments/{comment_id}"
        ).create_reaction(content)

    def permission(self, full_name: str, login: str) -> tuple[str, str | None]:
        """(permission, role_name) of a user on the repository, as GitHub reports them."""
        repo = self._repo(full_name)
        try:
            _, data = repo._requester.requestJsonAndCheck(
                "GET", f"{repo.url}/collaborators/{login}/permission"
            )
        except GithubException as exc:
            if exc.status == 404:
                return "none", None
            raise
        return data.get("permission", "none"), data.get("role_name")

    def list_open_pulls(
        self, full_name: str, *, page: int, per_page: int, etag: str | None = None
    ) -> RawAnswer:
        """One page of the open PRs, oldest first; with ``etag``, 304 when it is unchanged.

        Oldest first, so new PRs land on the last page and the earlier pages stay 304.
        """
        status, headers, body = self.gh.requester.requestJson(
            "GET",
            f"/repos/{full_name}/pulls",
            parameters={
                "state": "open",
                "per_page": per_page,
                "page": page,
                "sort": "created",
                "direction": "asc",
            },
            headers={"If-None-Match": etag} if etag else {},
        )
        return RawAnswer(status, _header(headers, "ETag"), body or "")

    def pull_files(self, full_name: str, numbers: list[int]) -> RawAnswer:
        """Text, head and files of several PRs in one GraphQL query (aliases ``pr_<n>``)."""
        owner, _, name = full_name.partition("/")
        aliases = " ".join(
            f"pr_{int(n)}: pullRequest(number: {int(n)}) {{ {_PULL_FILES_FIELDS} }}"
            for n in numbers
        )
        # Names go in as JSON strings: a repository name cannot end the string early.
        query = (
            f"query {{ repository(owner: {json.dumps(owner)}, name: {json.dumps(name)}) "
            f"{{ {aliases} }} }}"
        )
        status, headers, body = self.gh.requester.requestJson(
            "POST", self.gh.requester.graphql_url, input={"query": query, "variables": {}}
        )
        return RawAnswer(status, _header(headers, "ETag"), body or "")

    def review_decision(self, full_name: str, number: int) -> str | None:
        """GitHub's ``reviewDecision`` of the PR (APPROVED, CHANGES_REQUESTED,
        REVIEW_REQUIRED; null where the base branch requires no review). GithubException
        when GitHub answers with errors instead."""
        owner, _, name = full_name.partition("/")
        query = (
            f"query {{ repository(owner: {json.dumps(owner)}, name: {json.dumps(name)}) "
            f"{{ pullRequest(number: {int(number)}) {{ reviewDecision }} }} }}"
        )
        _, data = self.gh.requester.requestJsonAndCheck(
            "POST", self.gh.requester.graphql_url, input={"query": query, "variables": {}}
        )
        pull = (((data or {}).get("data") or {}).get("repository") or {}).get("pullRequest")
        if not isinstance(pull, dict):
            raise GithubException(200, data, None)
        decision = pull.get("reviewDecision")
        return decision if isinstance(decision, str) else None


__all__ = [
    "CHECK_RUN_NAME",
    "GitHubApp",
    "HeadChecks",
    "HookPage",
    "InstallationClient",
    "PullInfo",
    "RawAnswer",
    "github",
]
