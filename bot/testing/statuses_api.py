"""Commit statuses, as other apps' CI posts them (vLLM's Buildkite: one per job), and the
combined status prbot reads (``GET …/commits/{ref}/status``: the latest status per context,
newest first, paginated like GitHub's with ``per_page`` and ``page``)."""

from __future__ import annotations

from typing import Any

from bot.testing.host import RouteHost
from bot.testing.rest_core import ApiRequest, ApiResponse, HttpError, validation_failed
from bot.testing.state import FakeRepo, now_iso

STATES = ("error", "failure", "pending", "success")


def combined_state(latest: list[dict[str, Any]]) -> str:
    """GitHub's rule: failure if any is error or failure, pending if any is pending or there
    are none, success otherwise."""
    states = {s["state"] for s in latest}
    if states & {"error", "failure"}:
        return "failure"
    return "pending" if not latest or "pending" in states else "success"


def register_status_routes(api: RouteHost, repo_pattern: str) -> None:
    def shape(repo: FakeRepo, status: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": f"{api.gh.url}/repos/{repo.full_name}/statuses/{status['sha']}",
            "avatar_url": None,
            "id": status["id"],
            "node_id": f"SC_{status['id']}",
            "state": status["state"],
            "description": status.get("description"),
            "target_url": status.get("target_url"),
            "context": status["context"],
            "created_at": status["created_at"],
            "updated_at": status["created_at"],
        }

    def combined(req: ApiRequest) -> ApiResponse:
        repo = api.repo(req)
        sha = repo.git.resolve(req.params["ref"])
        if sha is None:
            raise HttpError(422, f"No commit found for SHA: {req.params['ref']}")
        latest: dict[str, dict[str, Any]] = {}
        for status in repo.statuses:
            if status["sha"] == sha:
                latest.pop(status["context"], None)
                latest[status["context"]] = status
        newest = list(reversed(latest.values()))
        page = api.page(req, [shape(repo, s) for s in newest])
        page.body = {
            "state": combined_state(newest),
            "statuses": page.body,
            "sha": sha,
            "total_count": len(newest),
            "repository": api.gh.shapes.repository(repo),
            "commit_url": f"{api.gh.url}/repos/{repo.full_name}/commits/{sha}",
            "url": f"{api.gh.url}/repos/{repo.full_name}/commits/{sha}/status",
        }
        return page

    def create(req: ApiRequest) -> ApiResponse:
        repo = api.repo(req)
        sha = repo.git.resolve(req.params["sha"])
        data = req.json()
        if sha is None:
            raise HttpError(422, f"No commit found for SHA: {req.params['sha']}")
        if data.get("state") not in STATES:
            raise validation_failed("Status", "state")
        status = add_status(
            repo,
            sha,
            str(data.get("context") or "default"),
            data["state"],
            target_url=data.get("target_url"),
            description=data.get("description"),
        )
        return api.ok(shape(repo, status), status=201)

    api.router.add("GET", rf"{repo_pattern}/commits/(?P<ref>.+)/status", combined)
    api.router.add("POST", rf"{repo_pattern}/statuses/(?P<sha>[0-9a-f]{{40}})", create)


def add_status(
    repo: FakeRepo,
    sha: str,
    context: str,
    state: str,
    *,
    target_url: str | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    status = {
        "id": 8_000_000 + len(repo.statuses),
        "sha": sha,
        "context": context,
        "state": state,
        "target_url": target_url,
        "description": description,
        "created_at": now_iso(),
    }
    repo.statuses.append(status)
    return status
