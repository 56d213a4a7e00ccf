"""Webhook payloads as GitHub delivers them to an App (octokit/webhooks payload-examples)."""

from __future__ import annotations

from typing import Any

from bot.testing.payloads import Shapes
from bot.testing.state import CheckRun, Comment, FakeRepo, Installation, PullRequest, node_id

PULL_REQUEST_ACTIONS = (
    "opened",
    "synchronize",
    "reopened",
    "edited",
    "closed",
    "ready_for_review",
    "converted_to_draft",
    "labeled",
    "unlabeled",
    "assigned",
    "unassigned",
    "review_requested",
    "locked",
    "unlocked",
)


def _installation_ref(installation_id: int) -> dict[str, Any]:
    return {
        "id": installation_id,
        "node_id": node_id("IntegrationInstallation", installation_id),
    }


def pull_request_event(
    shapes: Shapes,
    repo: FakeRepo,
    pr: PullRequest,
    action: str,
    *,
    label: str | None = None,
) -> dict[str, Any]:
    """A `pull_request` delivery; synchronize carries before/after, edited carries changes."""
    if action not in PULL_REQUEST_ACTIONS:
        raise ValueError(f"unknown pull_request action {action!r}")
    payload: dict[str, Any] = {
        "action": action,
        "number": pr.number,
        "pull_request": shapes.pull(repo, pr, repo.pull_diff(pr)),
    }
    if action == "synchronize":
        payload["before"] = pr.head_history[-1] if pr.head_history else pr.head_sha
        payload["after"] = pr.head_sha
    elif action == "edited":
        payload["changes"] = {key: {"from": value} for key, value in pr.changes.items()}
    elif action in ("labeled", "unlabeled"):
        name = label or "enhancement"
        payload["label"] = {
            "id": 1000 + len(name),
            "node_id": node_id("Label", 1000 + len(name)),
            "url": f"{shapes.base}/repos/{repo.full_name}/labels/{name}",
            "name": name,
            "color": "a2eeef",
            "default": False,
            "description": None,
        }
    payload["repository"] = shapes.repository(repo)
    payload["installation"] = _installation_ref(repo.installation_id)
    payload["sender"] = shapes.user(pr.author)
    return payload


def issue_comment_event(
    shapes: Shapes, repo: FakeRepo, pr: PullRequest, comment: Comment, action: str
) -> dict[str, Any]:
    """An `issue_comment` delivery on a pull request (so `issue.pull_request` is set)."""
    if action not in ("created", "edited", "deleted"):
        raise ValueError(f"unknown issue_comment action {action!r}")
    payload: dict[str, Any] = {
        "action": action,
        "issue": shapes.issue(repo, pr),
        "comment": shapes.comment(repo, comment),
    }
    if action == "edited":
        payload["changes"] = {"body": {"from": comment.previous_body}}
    payload["repository"] = shapes.repository(repo)
    payload["installation"] = _installation_ref(repo.installation_id)
    payload["sender"] = shapes.user(comment.author, bot=comment.is_bot)
    return payload


def check_suite_shape(shapes: Shapes, repo: FakeRepo, run: CheckRun) -> dict[str, Any]:
    """The suite of one check run (this server keeps one run per suite)."""
    shape = shapes.check_run(repo, run)
    branch = next((p.head_branch for p in repo.pulls.values() if p.head_sha == run.head_sha), None)
    suite_id = shape["check_suite"]["id"]
    suite_url = f"{shapes.base}/repos/{repo.full_name}/check-suites/{suite_id}"
    return {
        "id": suite_id,
        "node_id": node_id("CheckSuite", suite_id),
        "head_branch": branch,
        "head_sha": run.head_sha,
        "status": run.status,
        "conclusion": run.conclusion,
        "url": suite_url,
        "before": None,
        "after": run.head_sha,
        "pull_requests": shape["pull_requests"],
        "app": shape["app"],
        "created_at": run.started_at,
        "updated_at": run.completed_at or run.started_at,
        "latest_check_runs_count": 1,
        "check_runs_url": f"{suite_url}/check-runs",
    }


def check_run_event(
    shapes: Shapes,
    repo: FakeRepo,
    run: CheckRun,
    action: str,
    sender: str,
    *,
    identifier: str | None = None,
) -> dict[str, Any]:
    """A `check_run` delivery: `rerequested` (Re-run) or `requested_action` (a button)."""
    if action not in ("created", "completed", "rerequested", "requested_action"):
        raise ValueError(f"unknown check_run action {action!r}")
    check_run = shapes.check_run(repo, run)
    check_run["check_suite"] = check_suite_shape(shapes, repo, run)
    payload: dict[str, Any] = {"action": action, "check_run": check_run}
    if action == "requested_action":
        payload["requested_action"] = {"identifier": identifier or ""}
    payload["repository"] = shapes.repository(repo)
    payload["installation"] = _installation_ref(repo.installation_id)
    payload["sender"] = shapes.user(sender)
    return payload


def status_event(shapes: Shapes, repo: FakeRepo, status: dict[str, Any]) -> dict[str, Any]:
    """A `status` delivery (no action): one commit status another app posted."""
    return {
        "id": status["id"],
        "sha": status["sha"],
        "name": repo.full_name,
        "target_url": status.get("target_url"),
        "avatar_url": None,
        "context": status["context"],
        "description": status.get("description"),
        "state": status["state"],
        "commit": {
            "sha": status["sha"],
            "url": f"{shapes.base}/repos/{repo.full_name}/commits/" + status["sha"],
        },
        "branches": [],
        "created_at": status["created_at"],
        "updated_at": status["created_at"],
        "repository": shapes.repository(repo),
        "installation": _installation_ref(repo.installation_id),
        "sender": shapes.user("buildkite[bot]"),
    }


def check_suite_event(
    shapes: Shapes, repo: FakeRepo, run: CheckRun, action: str, sender: str
) -> dict[str, Any]:
    """A `check_suite` delivery (`rerequested`: "Re-run all checks")."""
    if action not in ("completed", "requested", "rerequested"):
        raise ValueError(f"unknown check_suite action {action!r}")
    return {
        "action": action,
        "check_suite": check_suite_shape(shapes, repo, run),
        "repository": shapes.repository(repo),
        "installation": _installation_ref(repo.installation_id),
        "sender": shapes.user(sender),
    }


def installation_event(
    shapes: Shapes, inst: Installation, repos: list[FakeRepo], action: str
) -> dict[str, Any]:
    """An `installation` delivery (created, deleted, suspend, unsuspend, ...)."""
    body = shapes.installation(inst, repos)
    if action == "suspend":
        body["suspended_at"] = body["updated_at"]
        body["suspended_by"] = shapes.user(inst.account)
    return {
        "action": action,
        "installation": body,
        "repositories": [
            {
                "id": r.id,
                "node_id": node_id("Repository", r.id),
                "name": r.name,
                "full_name": r.full_name,
                "private": False,
            }
            for r in repos
        ],
        "requester": None,
        "sender": shapes.user(inst.account),
    }


def ping_event(shapes: Shapes, hook_id: int = 1) -> dict[str, Any]:
    """The `ping` GitHub sends when an App's webhook is created."""
    return {
        "zen": "Keep it logically awesome.",
        "hook_id": hook_id,
        "hook": {
            "type": "App",
            "id": hook_id,
            "name": "web",
            "active": True,
            "events": ["check_run", "issue_comment", "pull_request", "push"],
            "config": {
                "content_type": "json",
                "insecure_ssl": "0",
                "url": f"{shapes.base}/webhooks/github",
            },
            "updated_at": "2024-01-01T00:00:00Z",
            "created_at": "2024-01-01T00:00:00Z",
            "app_id": shapes.app_id,
            "deliveries_url": f"{shapes.base}/app/hook/deliveries",
        },
    }
