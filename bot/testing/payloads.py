"""REST objects and webhook payloads in GitHub's shapes, with the test server's own URLs.

Modelled on GitHub's REST docs and octokit/webhooks `payload-examples/`: every field a client
may read is present, including the ones GitHub sends as null, and every `*_url` points back at
the server so PyGithub can follow it.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from typing import Any

from bot.testing.bare_repo import DiffEntry
from bot.testing.state import (
    CheckRun,
    Comment,
    FakeRepo,
    Installation,
    PullRequest,
    Reaction,
    node_id,
)

REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
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


class Shapes:
    """Builds JSON objects for one server address, app and set of user ids."""

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
            "permissions": dict(APP_PERMISSIONS),
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

    def _branch_ref(self, repo: FakeRepo, branch: str, sha: str) -> dict[str, Any]:
        return {
            "label": f"{repo.owner}:{branch}",
            "ref": branch,
            "sha": sha,
            "user": self.user(repo.owner),
            "repo": self.repository(repo),
        }

    def pull(self, repo: FakeRepo, pr: PullRequest, diff: list[DiffEntry]) -> dict[str, Any]:
        api = f"{self.base}/repos/{repo.full_name}"
        html = f"{self.base}/{repo.full_name}/pull/{pr.number}"
        base_sha = repo.branch_sha(pr.base_branch) or pr.head_sha
        statuses = f"{api}/statuses/{pr.head_sha}"
        return {
            "url": f"{api}/pulls/{pr.number}",
            "id": pr.id,
            "node_id": node_id("PullRequest", pr.id),
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": f"{api}/issues/{pr.number}",
            "number": pr.number,
            "state": pr.state,
            "locked": False,
            "title": pr.title,
            "user": self.user(pr.author),
            "body": pr.body,
            "created_at": pr.created_at,
            "updated_at": pr.updated_at,
            "closed_at": pr.closed_at,
            "merged_at": None,
            "merge_commit_sha": None,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "labels": [],
            "milestone": None,
            "draft": pr.draft,
            "commits_url": f"{api}/pulls/{pr.number}/commits",
            "review_comments_url": f"{api}/pulls/{pr.number}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{pr.number}/comments",
            "statuses_url": statuses,
            "head": self._branch_ref(repo, pr.head_branch, pr.head_sha),
            "base": self._branch_ref(repo, pr.base_branch, base_sha),
            "_links": {
                "self": {"href": f"{api}/pulls/{pr.number}"},
                "html": {"href": html},
                "issue": {"href": f"{api}/issues/{pr.number}"},
                "comments": {"href": f"{api}/issues/{pr.number}/comments"},
                "review_comments": {"href": f"{api}/pulls/{pr.number}/comments"},
                "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
                "commits": {"href": f"{api}/pulls/{pr.number}/commits"},
                "statuses": {"href": statuses},
            },
            "author_association": pr.author_association,
            "auto_merge": None,
            "active_lock_reason": None,
            "merged": False,
            "mergeable": None,
            "rebaseable": None,
            "mergeable_state": "unknown",
            "merged_by": None,
            "comments": sum(1 for c in repo.comments.values() if c.number == pr.number),
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": repo.git.count_commits(base_sha, pr.head_sha),
            "additions": sum(d.additions for d in diff),
            "deletions": sum(d.deletions for d in diff),
            "changed_files": len(diff),
        }

    def pull_file(self, repo: FakeRepo, pr: PullRequest, entry: DiffEntry) -> dict[str, Any]:
        blob = self.base_blob_url(repo, pr.head_sha, entry.filename)
        item: dict[str, Any] = {
            "sha": pr.head_sha,
            "filename": entry.filename,
            "status": entry.status,
            "additions": entry.additions,
            "deletions": entry.deletions,
            "changes": entry.changes,
            "blob_url": blob,
            "raw_url": blob.replace("/blob/", "/raw/"),
            "contents_url": (
                f"{self.base}/repos/{repo.full_name}/contents/{entry.filename}?ref={pr.head_sha}"
            ),
        }
        if entry.patch is not None:
            item["patch"] = entry.patch
        if entry.previous_filename:
            item["previous_filename"] = entry.previous_filename
        return item

    def base_blob_url(self, repo: FakeRepo, sha: str, path: str) -> str:
        return f"{self.base}/{repo.full_name}/blob/{sha}/{path}"

    def issue(self, repo: FakeRepo, pr: PullRequest) -> dict[str, Any]:
        """The issue side of a pull request (what issue_comment payloads carry)."""
        api = f"{self.base}/repos/{repo.full_name}"
        html = f"{self.base}/{repo.full_name}/pull/{pr.number}"
        return {
            "url": f"{api}/issues/{pr.number}",
            "repository_url": api,
            "labels_url": f"{api}/issues/{pr.number}/labels{{/name}}",
            "comments_url": f"{api}/issues/{pr.number}/comments",
            "events_url": f"{api}/issues/{pr.number}/events",
            "html_url": html,
            "id": pr.id,
            "node_id": node_id("PullRequest", pr.id),
            "number": pr.number,
            "title": pr.title,
            "user": self.user(pr.author),
            "labels": [],
            "state": pr.state,
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": sum(1 for c in repo.comments.values() if c.number == pr.number),
            "created_at": pr.created_at,
            "updated_at": pr.updated_at,
            "closed_at": pr.closed_at,
            "author_association": pr.author_association,
            "active_lock_reason": None,
            "draft": pr.draft,
            "pull_request": {
                "url": f"{api}/pulls/{pr.number}",
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": None,
            },
            "body": pr.body,
            "reactions": self._reaction_summary(f"{api}/issues/{pr.number}/reactions", []),
            "timeline_url": f"{api}/issues/{pr.number}/timeline",
            "performed_via_github_app": None,
            "state_reason": None,
        }

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

    # --- comments, reactions, check runs
    def comment(self, repo: FakeRepo, c: Comment) -> dict[str, Any]:
        api = f"{self.base}/repos/{repo.full_name}"
        url = f"{api}/issues/comments/{c.id}"
        mine = [r for r in repo.reactions if r.comment_id == c.id]
        return {
            "url": url,
            "html_url": f"{self.base}/{repo.full_name}/pull/{c.number}#issuecomment-{c.id}",
            "issue_url": f"{api}/issues/{c.number}",
            "id": c.id,
            "node_id": node_id("IssueComment", c.id),
            "user": self.user(c.author, bot=c.is_bot),
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "author_association": c.author_association,
            "body": c.body,
            "reactions": self._reaction_summary(f"{url}/reactions", mine),
            "performed_via_github_app": self.app() if c.is_bot else None,
        }

    def _reaction_summary(self, url: str, reactions: list[Reaction]) -> dict[str, Any]:
        summary: dict[str, Any] = {"url": url, "total_count": len(reactions)}
        for content in REACTION_CONTENTS:
            summary[content] = sum(1 for r in reactions if r.content == content)
        return summary

    def reaction(self, r: Reaction) -> dict[str, Any]:
        return {
            "id": r.id,
            "node_id": node_id("Reaction", r.id),
            "user": self.user(r.user, bot=r.is_bot),
            "content": r.content,
            "created_at": r.created_at,
        }

    def check_run(self, repo: FakeRepo, run: CheckRun) -> dict[str, Any]:
        api = f"{self.base}/repos/{repo.full_name}"
        output = run.output
        pulls = [
            {
                "url": f"{api}/pulls/{p.number}",
                "id": p.id,
                "number": p.number,
                "head": {"ref": p.head_branch, "sha": p.head_sha, "repo": self._repo_ref(repo)},
                "base": {
                    "ref": p.base_branch,
                    "sha": repo.branch_sha(p.base_branch) or p.head_sha,
                    "repo": self._repo_ref(repo),
                },
            }
            for p in repo.pulls.values()
            if p.head_sha == run.head_sha and p.state == "open"
        ]
        return {
            "id": run.id,
            "head_sha": run.head_sha,
            "node_id": node_id("CheckRun", run.id),
            "external_id": run.external_id or "",
            "url": f"{api}/check-runs/{run.id}",
            "html_url": f"{self.base}/{repo.full_name}/runs/{run.id}",
            "details_url": run.details_url or f"{self.base}/{repo.full_name}/runs/{run.id}",
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": run.started_at,
            "completed_at": run.completed_at,
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": 0,
                "annotations_url": f"{api}/check-runs/{run.id}/annotations",
            },
            "name": run.name,
            "check_suite": {"id": run.id + 500_000_000},
            "app": self.app(),
            "pull_requests": pulls,
        }

    def _repo_ref(self, repo: FakeRepo) -> dict[str, Any]:
        return {"id": repo.id, "url": f"{self.base}/repos/{repo.full_name}", "name": repo.name}


def _utc(iso: str) -> str:
    """git's `%aI` (with offset) as GitHub's Z-suffixed UTC timestamp."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def error_body(
    message: str, status: int, *, docs: str = "https://docs.github.com/rest"
) -> dict[str, Any]:
    """GitHub's error object; recent API versions repeat the status as a string."""
    return {"message": message, "documentation_url": docs, "status": str(status)}
