"""The one GraphQL query prbot sends: many aliased `pullRequest(number:)` under one repository.

This is pattern matching, not a GraphQL engine: it finds the repository and each alias, and
answers every field the duplicates reconcile reads. Any other query gets a GraphQL error.
"""

from __future__ import annotations

import re
from typing import Any

from bot.testing.host import ServerState
from bot.testing.state import FakeRepo, PullRequest

_REPOSITORY = re.compile(r'repository\(\s*owner:\s*"([^"]+)"\s*,\s*name:\s*"([^"]+)"\s*\)')
_PULL = re.compile(r"(?:(\w+)\s*:\s*)?pullRequest\(\s*number:\s*(\d+)\s*\)")
FILES_LIMIT = 100


WRITERS = ("write", "maintain", "admin")


def review_decision(repo: FakeRepo, pr: PullRequest) -> str | None:
    """GitHub's reviewDecision: null unless the branch requires reviews; then each writer's
    latest deciding review counts, on whatever commit it was (stale reviews not dismissed)."""
    if repo.required_reviews <= 0:
        return None
    latest: dict[str, str] = {}
    for review in pr.reviews:
        if review["state"] in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest[review["user"].casefold()] = review["state"]
    levels = {login.casefold(): level for login, level in repo.permissions.items()}
    counted = [state for login, state in latest.items() if levels.get(login) in WRITERS]
    if "CHANGES_REQUESTED" in counted:
        return "CHANGES_REQUESTED"
    return "APPROVED" if counted.count("APPROVED") >= repo.required_reviews else "REVIEW_REQUIRED"


def answer_graphql(gh: ServerState, query: str, *, installation_id: int | None) -> dict[str, Any]:
    repo_match = _REPOSITORY.search(query)
    pulls = _PULL.findall(query)
    if repo_match is None or not pulls:
        return {
            "errors": [
                {
                    "message": "This test server answers only repository { pullRequest(number:) }",
                    "locations": [{"line": 1, "column": 1}],
                }
            ]
        }
    owner, name = repo_match.groups()
    repo = gh.repos.get(f"{owner}/{name}")
    if repo is None or (installation_id is not None and repo.installation_id != installation_id):
        return {
            "data": {"repository": None},
            "errors": [
                {
                    "type": "NOT_FOUND",
                    "path": ["repository"],
                    "locations": [{"line": 1, "column": 1}],
                    "message": f"Could not resolve to a Repository with the name '{owner}/{name}'.",
                }
            ],
        }
    data: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    for alias, number_text in pulls:
        key = alias or "pullRequest"
        pr = repo.pulls.get(int(number_text))
        if pr is None:
            data[key] = None
            errors.append(
                {
                    "type": "NOT_FOUND",
                    "path": ["repository", key],
                    "locations": [{"line": 1, "column": 1}],
                    "message": (
                        f"Could not resolve to a PullRequest with the number of {number_text}."
                    ),
                }
            )
            continue
        files = repo.pull_diff(pr)
        data[key] = {
            "number": pr.number,
            "title": pr.title,
            "body": pr.body or "",  # GraphQL's body is a non-null String
            "createdAt": pr.created_at,
            "headRefOid": pr.head_sha,
            "state": pr.state.upper(),
            "author": {"login": pr.author},
            "reviewDecision": review_decision(repo, pr),
            "files": {
                "totalCount": len(files),
                "nodes": [
                    {"path": f.filename, "additions": f.additions, "deletions": f.deletions}
                    for f in files[:FILES_LIMIT]
                ],
            },
        }
    result: dict[str, Any] = {"data": {"repository": data}}
    if errors:
        result["errors"] = errors
    return result
