"""REST objects in GitHub's shapes for pull requests and what happens on them.

Modelled on GitHub's REST docs and octokit/webhooks `payload-examples/`: every field a client
may read is present, including the ones GitHub sends as null, and every `*_url` points back at
the server so PyGithub can follow it.
"""

from __future__ import annotations

import zlib
from typing import Any

from bot.testing.account_shapes import APP_EVENTS, APP_PERMISSIONS, AccountShapes
from bot.testing.bare_repo import DiffEntry
from bot.testing.state import CheckRun, Comment, FakeRepo, PullRequest, Reaction, node_id

REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
__all__ = ["APP_EVENTS", "APP_PERMISSIONS", "REACTION_CONTENTS", "Shapes", "error_body"]


class Shapes(AccountShapes):
    """All JSON objects the test server answers with or delivers, for one address and App."""

    def _branch_ref(self, repo: FakeRepo, branch: str, sha: str) -> dict[str, Any]:
        return {
            "label": f"{repo.owner}:{branch}",
            "ref": branch,
            "sha": sha,
            "user": self.user(repo.owner),
            "repo": self.repository(repo),
        }

    def review(self, repo: FakeRepo, pr: PullRequest, review: dict[str, Any]) -> dict[str, Any]:
        html = f"{self.base}/{repo.full_name}/pull/{pr.number}"
        return {
            "id": review["id"],
            "node_id": node_id("PullRequestReview", review["id"]),
            "user": self.user(review["user"]),
            "body": "",
            "state": review["state"],
            "html_url": f"{html}#pullrequestreview-{review['id']}",
            "pull_request_url": f"{self.base}/repos/{repo.full_name}/pulls/{pr.number}",
            "author_association": "NONE",
            "submitted_at": review["submitted_at"],
            "commit_id": review["commit_id"],
        }

    def _label(self, repo: Any, name: str) -> dict[str, Any]:
        api = f"{self.base}/repos/{repo.full_name}"
        return {"id": zlib.crc32(name.encode()), "name": name, "color": "0e8a16",
                "default": False, "description": None, "url": f"{api}/labels/{name}"}  # fmt: skip

    def _head_ref(self, repo: FakeRepo, pr: PullRequest) -> dict[str, Any]:
        if pr.fork_owner is None:
            return self._branch_ref(repo, pr.head_branch, pr.head_sha)
        return {
            "label": f"{pr.fork_owner}:{pr.head_branch}",
            "ref": pr.head_branch,
            "sha": pr.head_sha,
            "user": self.user(pr.fork_owner),
            "repo": self.fork_repository(repo, pr.fork_owner),
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
            "labels": [self._label(repo, name) for name in pr.labels],
            "milestone": None,
            "draft": pr.draft,
            "commits_url": f"{api}/pulls/{pr.number}/commits",
            "review_comments_url": f"{api}/pulls/{pr.number}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{pr.number}/comments",
            "statuses_url": statuses,
            "head": self._head_ref(repo, pr),
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
            "maintainer_can_modify": pr.maintainer_can_modify,
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
            "labels": [self._label(repo, name) for name in pr.labels],
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
            # GitHub leaves pull requests from forks out of this list.
            if p.head_sha == run.head_sha and p.state == "open" and p.fork_owner is None
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
                "annotations_count": len(run.annotations),
                "annotations_url": f"{api}/check-runs/{run.id}/annotations",
            },
            "name": run.name,
            "actions": [dict(a) for a in run.actions],
            "check_suite": {"id": run.id + 500_000_000},
            "app": run.app or self.app(),
            "pull_requests": pulls,
        }

    def _repo_ref(self, repo: FakeRepo) -> dict[str, Any]:
        return {"id": repo.id, "url": f"{self.base}/repos/{repo.full_name}", "name": repo.name}


def error_body(
    message: str, status: int, *, docs: str = "https://docs.github.com/rest"
) -> dict[str, Any]:
    """GitHub's error object; recent API versions repeat the status as a string."""
    return {"message": message, "documentation_url": docs, "status": str(status)}
