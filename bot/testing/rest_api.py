"""The REST endpoints prbot uses, answered from the test server's state in GitHub's shapes."""

from __future__ import annotations

from typing import Any

from bot.testing.actions_api import register_actions_routes
from bot.testing.app_hooks import register_app_hook_routes
from bot.testing.auth import mint_installation_token, rate_limit_status
from bot.testing.graphql import answer_graphql
from bot.testing.host import ServerState
from bot.testing.issues_api import register_issue_routes
from bot.testing.payloads import APP_PERMISSIONS
from bot.testing.rest_core import (
    ApiRequest,
    ApiResponse,
    HttpError,
    Router,
    not_found,
    paginate,
)
from bot.testing.state import FakeRepo, PullRequest
from bot.testing.statuses_api import register_status_routes
from bot.testing.teams_api import register_team_routes

REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"

# GitHub's permission endpoint folds the five roles into the three classic permissions.
_ROLE_TO_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
_ROLE_RANK = ["none", "read", "triage", "write", "maintain", "admin"]


class RestApi:
    """Route table plus handlers; every handler runs under the server's state lock."""

    def __init__(self, gh: ServerState) -> None:
        self.gh = gh
        self.router = Router()
        add = self.router.add
        add("GET", "/app", self.get_app, auth="jwt")
        add("GET", "/app/installations", self.list_installations, auth="jwt")
        add("GET", r"/app/installations/(?P<id>\d+)", self.get_installation, auth="jwt")
        add("POST", r"/app/installations/(?P<id>\d+)/access_tokens", self.create_token, auth="jwt")
        add("GET", f"{REPO}/installation", self.get_repo_installation, auth="jwt")
        add("GET", "/installation/repositories", self.list_installation_repos)
        add("GET", "/rate_limit", self.rate_limit)
        add("GET", REPO, self.get_repo)
        add("GET", f"{REPO}/pulls", self.list_pulls)
        add("GET", rf"{REPO}/pulls/(?P<number>\d+)", self.get_pull)
        add("GET", rf"{REPO}/pulls/(?P<number>\d+)/files", self.list_pull_files)
        add("GET", rf"{REPO}/pulls/(?P<number>\d+)/reviews", self.list_pull_reviews)
        add("GET", rf"{REPO}/issues/(?P<number>\d+)", self.get_issue)
        # A ref may hold slashes; the lookahead leaves ".../check-runs" to its own route.
        add("GET", f"{REPO}/commits/(?P<ref>(?:(?!/check-runs$|/status$).)+)", self.get_commit)
        add("GET", f"{REPO}/collaborators/(?P<user>[^/]+)/permission", self.get_permission)
        add("POST", "/graphql", self.graphql)
        register_issue_routes(self, REPO)
        register_status_routes(self, REPO)
        register_app_hook_routes(self)
        # GitHub Actions (the jobs' second engine): gh.actions holds its runs for tests.
        gh.actions = register_actions_routes(self, REPO)
        gh.teams = register_team_routes(self)

    # --- lookups shared by handlers
    def repo(self, req: ApiRequest) -> FakeRepo:
        """The request's repository; 404 (as GitHub) when the token's installation lacks it."""
        repo = self.gh.repos.get(f"{req.params['owner']}/{req.params['repo']}")
        if repo is None:
            raise not_found()
        if req.installation_id is not None and repo.installation_id != req.installation_id:
            raise not_found()
        return repo

    def pull(self, repo: FakeRepo, number: int) -> PullRequest:
        pr = repo.pulls.get(number)
        if pr is None:
            raise not_found()
        return pr

    def ok(
        self, body: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> ApiResponse:
        return ApiResponse(status, body, headers or {})

    def page(self, req: ApiRequest, items: list[Any]) -> ApiResponse:
        chunk, headers = paginate(self.gh.url, req, items)
        return ApiResponse(200, chunk, headers)

    # --- the app and its installations
    def get_app(self, req: ApiRequest) -> ApiResponse:
        return self.ok(self.gh.shapes.app())

    def _installation_json(self, installation_id: int) -> dict:
        inst = self.gh.installations.get(installation_id)
        if inst is None:
            raise not_found()
        repos = [r for r in self.gh.repos.values() if r.installation_id == inst.id]
        return self.gh.shapes.installation(inst, repos)

    def list_installations(self, req: ApiRequest) -> ApiResponse:
        return self.page(req, [self._installation_json(i) for i in sorted(self.gh.installations)])

    def get_installation(self, req: ApiRequest) -> ApiResponse:
        return self.ok(self._installation_json(req.int_param("id")))

    def get_repo_installation(self, req: ApiRequest) -> ApiResponse:
        return self.ok(self._installation_json(self.repo(req).installation_id))

    def create_token(self, req: ApiRequest) -> ApiResponse:
        installation_id = req.int_param("id")
        if installation_id not in self.gh.installations:
            raise not_found()
        token = mint_installation_token(installation_id)
        self.gh.tokens[token.value] = token
        repos = [r for r in self.gh.repos.values() if r.installation_id == installation_id]
        return self.ok(
            {
                "token": token.value,
                "expires_at": token.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": dict(
                    self.gh.installations[installation_id].permissions or APP_PERMISSIONS
                ),
                "repository_selection": "selected" if repos else "all",
            },
            status=201,
        )

    def list_installation_repos(self, req: ApiRequest) -> ApiResponse:
        repos = [
            self.gh.shapes.repository(r)
            for r in self.gh.repos.values()
            if r.installation_id == req.installation_id
        ]
        chunk, headers = paginate(self.gh.url, req, repos)
        body = {
            "total_count": len(repos),
            "repository_selection": "selected",
            "repositories": chunk,
        }
        return self.ok(body, headers=headers)

    def rate_limit(self, req: ApiRequest) -> ApiResponse:
        core = rate_limit_status(req.token)
        return self.ok({"resources": {"core": core, "graphql": core}, "rate": core})

    # --- repositories and pull requests
    def get_repo(self, req: ApiRequest) -> ApiResponse:
        return self.ok(self.gh.shapes.repository(self.repo(req)))

    def list_pulls(self, req: ApiRequest) -> ApiResponse:
        repo = self.repo(req)
        state = req.query.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise HttpError(422, "Validation Failed")
        pulls = [p for p in repo.pulls.values() if state == "all" or p.state == state]
        if "base" in req.query:
            pulls = [p for p in pulls if p.base_branch == req.query["base"]]
        sort = req.query.get("sort", "created")
        key = "updated_at" if sort in ("updated", "long-running") else "created_at"
        default_direction = "desc" if sort == "created" else "asc"
        descending = req.query.get("direction", default_direction) == "desc"
        # Ties on the timestamp (one-second resolution) fall back to the number, as creation order.
        pulls.sort(key=lambda p: (getattr(p, key), p.number), reverse=descending)
        chunk, headers = paginate(self.gh.url, req, pulls)
        body = [self.gh.shapes.pull(repo, p, repo.pull_diff(p)) for p in chunk]
        return self.ok(body, headers=headers)

    def get_pull(self, req: ApiRequest) -> ApiResponse:
        repo = self.repo(req)
        pr = self.pull(repo, req.int_param("number"))
        return self.ok(self.gh.shapes.pull(repo, pr, repo.pull_diff(pr)))

    def list_pull_files(self, req: ApiRequest) -> ApiResponse:
        repo = self.repo(req)
        pr = self.pull(repo, req.int_param("number"))
        # GitHub stops listing at 3000 files; the diff itself is not truncated here.
        files = [self.gh.shapes.pull_file(repo, pr, e) for e in repo.pull_diff(pr)[:3000]]
        return self.page(req, files)

    def list_pull_reviews(self, req: ApiRequest) -> ApiResponse:
        repo = self.repo(req)
        pr = self.pull(repo, req.int_param("number"))
        return self.page(req, [self.gh.shapes.review(repo, pr, r) for r in pr.reviews])

    def get_issue(self, req: ApiRequest) -> ApiResponse:
        repo = self.repo(req)
        return self.ok(self.gh.shapes.issue(repo, self.pull(repo, req.int_param("number"))))

    def get_commit(self, req: ApiRequest) -> ApiResponse:
        repo = self.repo(req)
        sha = repo.git.resolve(req.params["ref"])
        if sha is None:
            raise HttpError(422, f"No commit found for SHA: {req.params['ref']}")
        return self.ok(self.gh.shapes.commit(repo, repo.git.commit_info(sha)))

    def get_permission(self, req: ApiRequest) -> ApiResponse:
        repo = self.repo(req)
        login = req.params["user"]
        role = repo.permissions.get(login) or ("admin" if login == repo.owner else "read")
        user = self.gh.shapes.user(login)
        rank = _ROLE_RANK.index(role)
        user["permissions"] = {
            "admin": rank >= _ROLE_RANK.index("admin"),
            "maintain": rank >= _ROLE_RANK.index("maintain"),
            "push": rank >= _ROLE_RANK.index("write"),
            "triage": rank >= _ROLE_RANK.index("triage"),
            "pull": rank >= _ROLE_RANK.index("read"),
        }
        user["role_name"] = role
        return self.ok({"permission": _ROLE_TO_PERMISSION[role], "role_name": role, "user": user})

    def graphql(self, req: ApiRequest) -> ApiResponse:
        query = req.json().get("query")
        if not isinstance(query, str):
            raise HttpError(400, "Problems parsing JSON")
        return self.ok(answer_graphql(self.gh, query, installation_id=req.installation_id))
