"""Who and where in GitHub's shapes: users, the App, installations, repositories, commits.

Every `*_url` points back at the test server so PyGithub can follow it.
"""

from __future__ import annotations

import dataclasses
import zlib
from datetime import UTC, datetime
from typing import Any

from bot.testing.state import FakeRepo, Installation, node_id

APP_PERMISSIONS = {
    "checks": "write",
    "contents": "read",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "write",
    "actions": "write",
}
APP_EVENTS = ["check_run", "issue_comment", "pull_request", "push"]
_REPO_TIMESTAMP = "2024-01-01T00:00:00Z"


class AccountShapes:
    """Builds account and repository objects for one server address and App."""

    def __init__(self, base_url: str, *, app_id: int, app_slug: str) -> None:
        self.base = base_url
        self.app_id = app_id
        self.app_slug = app_slug
        self._user_ids: dict[str, int] = {}

    def user_id(self, login: str) -> int:
        # Stable per login, so the same person has the same id in every payload.
        if login not in self._user_ids:
            self._user_ids[login] = 1000 + zlib.crc32(login.encode()) % 9_000_000
        return self._user_ids[login]

    # --- people and apps
    def user(self, login: str, *, bot: bool = False) -> dict[str, Any]:
        uid = self.user_id(login)
        api = f"{self.base}/users/{login}"
        return {
            "login": login,
            "id": uid,
            "node_id": node_id("Bot" if bot else "User", uid),
            "avatar_url": f"{self.base}/avatars/u/{uid}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.base}/{'apps/' + login.removesuffix('[bot]') if bot else login}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": "Bot" if bot else "User",
            "user_view_type": "public",
            "site_admin": False,
        }

    def app(self) -> dict[str, Any]:
        owner = self.user(f"{self.app_slug}-owner")
        return {
            "id": self.app_id,
            "slug": self.app_slug,
            "node_id": node_id("Integration", self.app_id),
            "client_id": f"Iv1.{self.app_id:016x}",
            "owner": owner,
            "name": self.app_slug,
            "description": "",
            "external_url": f"{self.base}/apps/{self.app_slug}",
            "html_url": f"{self.base}/apps/{self.app_slug}",
            "created_at": _REPO_TIMESTAMP,
            "updated_at": _REPO_TIMESTAMP,
            "permissions": dict(APP_PERMISSIONS),
            "events": list(APP_EVENTS),
            "installations_count": 1,
        }

    def installation(self, inst: Installation, repos: list[FakeRepo]) -> dict[str, Any]:
        account = self.user(inst.account)
        return {
            "id": inst.id,
            "node_id": node_id("IntegrationInstallation", inst.id),
            "client_id": f"Iv1.{self.app_id:016x}",
            "account": account,
            "repository_selection": "selected" if repos else "all",
            "access_tokens_url": f"{self.base}/app/installations/{inst.id}/access_tokens",
            "repositories_url": f"{self.base}/installation/repositories",
            "html_url": f"{self.base}/settings/installations/{inst.id}",
            "app_id": self.app_id,
            "app_slug": self.app_slug,
            "target_id": account["id"],
            "target_type": "User",
            "permissions": dict(inst.permissions or APP_PERMISSIONS),
            "events": list(APP_EVENTS),
            "created_at": inst.created_at,
            "updated_at": inst.created_at,
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_at": None,
            "suspended_by": None,
        }

    # --- repositories and pulls
    def repository(self, repo: FakeRepo) -> dict[str, Any]:
        api = f"{self.base}/repos/{repo.full_name}"
        html = f"{self.base}/{repo.full_name}"
        host = self.base.split("://", 1)[1]
        return {
            "id": repo.id,
            "node_id": node_id("Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "private": False,
            "owner": self.user(repo.owner),
            "html_url": html,
            "description": None,
            "fork": False,
            "url": api,
            "forks_url": f"{api}/forks",
            "keys_url": f"{api}/keys{{/key_id}}",
            "collaborators_url": f"{api}/collaborators{{/collaborator}}",
            "teams_url": f"{api}/teams",
            "hooks_url": f"{api}/hooks",
            "issue_events_url": f"{api}/issues/events{{/number}}",
            "events_url": f"{api}/events",
            "assignees_url": f"{api}/assignees{{/user}}",
            "branches_url": f"{api}/branches{{/branch}}",
            "tags_url": f"{api}/tags",
            "blobs_url": f"{api}/git/blobs{{/sha}}",
            "git_tags_url": f"{api}/git/tags{{/sha}}",
            "git_refs_url": f"{api}/git/refs{{/sha}}",
            "trees_url": f"{api}/git/trees{{/sha}}",
            "statuses_url": f"{api}/statuses/{{sha}}",
            "languages_url": f"{api}/languages",
            "stargazers_url": f"{api}/stargazers",
            "contributors_url": f"{api}/contributors",
            "subscribers_url": f"{api}/subscribers",
            "subscription_url": f"{api}/subscription",
            "commits_url": f"{api}/commits{{/sha}}",
            "git_commits_url": f"{api}/git/commits{{/sha}}",
            "comments_url": f"{api}/comments{{/number}}",
            "issue_comment_url": f"{api}/issues/comments{{/number}}",
            "contents_url": f"{api}/contents/{{+path}}",
            "compare_url": f"{api}/compare/{{base}}...{{head}}",
            "merges_url": f"{api}/merges",
            "archive_url": f"{api}/{{archive_format}}{{/ref}}",
            "downloads_url": f"{api}/downloads",
            "issues_url": f"{api}/issues{{/number}}",
            "pulls_url": f"{api}/pulls{{/number}}",
            "milestones_url": f"{api}/milestones{{/number}}",
            "notifications_url": f"{api}/notifications{{?since,all,participating}}",
            "labels_url": f"{api}/labels{{/name}}",
            "releases_url": f"{api}/releases{{/id}}",
            "deployments_url": f"{api}/deployments",
            "created_at": repo.created_at,
            "updated_at": repo.created_at,
            "pushed_at": repo.created_at,
            "git_url": f"git://{host}/{repo.full_name}.git",
            "ssh_url": f"git@{host.split(':')[0]}:{repo.full_name}.git",
            "clone_url": f"{html}.git",
            "svn_url": html,
            "homepage": None,
            "size": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "language": None,
            "has_issues": True,
            "has_projects": True,
            "has_downloads": True,
            "has_wiki": True,
            "has_pages": False,
            "has_discussions": False,
            "forks_count": 0,
            "mirror_url": None,
            "archived": False,
            "disabled": False,
            "open_issues_count": sum(1 for p in repo.pulls.values() if p.state == "open"),
            "license": None,
            "allow_forking": True,
            "is_template": False,
            "web_commit_signoff_required": False,
            "topics": [],
            "visibility": "public",
            "forks": 0,
            "open_issues": sum(1 for p in repo.pulls.values() if p.state == "open"),
            "watchers": 0,
            "default_branch": repo.default_branch,
        }

    def fork_repository(self, repo: FakeRepo, owner: str) -> dict[str, Any]:
        """`owner`'s fork of `repo`, as it appears in the head of a pull request from it."""
        fork_id = 900_000_000 + zlib.crc32(f"{owner}/{repo.name}".encode()) % 90_000_000
        fork = dataclasses.replace(repo, id=fork_id, owner=owner, pulls={})
        shape = self.repository(fork)
        shape["fork"] = True
        return shape

    def commit(self, repo: FakeRepo, info: dict[str, str]) -> dict[str, Any]:
        """GET /repos/{o}/{r}/commits/{ref} without `files` and `stats` (prbot reads neither)."""
        api = f"{self.base}/repos/{repo.full_name}"
        html = f"{self.base}/{repo.full_name}"
        sha = info["sha"]
        login = info["an"]
        return {
            "sha": sha,
            "node_id": node_id("Commit", int(sha[:7], 16)),
            "commit": {
                "author": {"name": info["an"], "email": info["ae"], "date": _utc(info["ad"])},
                "committer": {"name": info["cn"], "email": info["ce"], "date": _utc(info["cd"])},
                "message": info["message"].rstrip("\n"),
                "tree": {"sha": info["tree"], "url": f"{api}/git/trees/{info['tree']}"},
                "url": f"{api}/git/commits/{sha}",
                "comment_count": 0,
                "verification": {
                    "verified": False,
                    "reason": "unsigned",
                    "signature": None,
                    "payload": None,
                    "verified_at": None,
                },
            },
            "url": f"{api}/commits/{sha}",
            "html_url": f"{html}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "author": self.user(login),
            "committer": None,
            "parents": [
                {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{html}/commit/{p}"}
                for p in info["parents"].split()
            ],
        }


def _utc(iso: str) -> str:
    """git's `%aI` (with offset) as GitHub's Z-suffixed UTC timestamp."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
