"""What the bot writes: issue comments, reactions on them, and check runs."""

from __future__ import annotations

from typing import Any

from bot.testing.host import RouteHost
from bot.testing.payloads import REACTION_CONTENTS
from bot.testing.rest_core import ApiRequest, ApiResponse, HttpError, not_found, validation_failed
from bot.testing.state import CheckRun, Comment, FakeRepo, Reaction, now_iso

CHECK_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CHECK_CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)


def register_issue_routes(api: RouteHost, repo_pattern: str) -> None:
    handlers = IssueHandlers(api)
    add = api.router.add
    comments = rf"{repo_pattern}/issues/(?P<number>\d+)/comments"
    comment = rf"{repo_pattern}/issues/comments/(?P<id>\d+)"
    add("GET", comments, handlers.list_comments)
    add("POST", comments, handlers.create_comment)
    add("GET", comment, handlers.get_comment)
    add("PATCH", comment, handlers.edit_comment)
    add("DELETE", comment, handlers.delete_comment)
    add("GET", f"{comment}/reactions", handlers.list_reactions)
    add("POST", f"{comment}/reactions", handlers.create_reaction)
    add("POST", f"{repo_pattern}/check-runs", handlers.create_check_run)
    add("GET", rf"{repo_pattern}/check-runs/(?P<id>\d+)", handlers.get_check_run)
    add("PATCH", rf"{repo_pattern}/check-runs/(?P<id>\d+)", handlers.update_check_run)
    add("GET", rf"{repo_pattern}/check-runs/(?P<id>\d+)/annotations", handlers.list_annotations)
    add("GET", f"{repo_pattern}/commits/(?P<ref>.+)/check-runs", handlers.list_check_runs)


class IssueHandlers:
    def __init__(self, api: RouteHost) -> None:
        self.api = api
        self.gh = api.gh

    # --- comments
    def _comment(self, req: ApiRequest) -> tuple[FakeRepo, Comment]:
        repo = self.api.repo(req)
        found = repo.comments.get(req.int_param("id"))
        if found is None:
            raise not_found()
        return repo, found

    def list_comments(self, req: ApiRequest) -> ApiResponse:
        repo = self.api.repo(req)
        number = req.int_param("number")
        self.api.pull(repo, number)
        ordered = sorted((c for c in repo.comments.values() if c.number == number), key=_by_id)
        return self.api.page(req, [self.gh.shapes.comment(repo, c) for c in ordered])

    def create_comment(self, req: ApiRequest) -> ApiResponse:
        repo = self.api.repo(req)
        pr = self.api.pull(repo, req.int_param("number"))
        body = _required_text(req.json(), "body", "IssueComment")
        comment = Comment(
            id=self.gh.ids(),
            number=pr.number,
            author=self.gh.bot_login,
            is_bot=True,
            body=body,
            author_association="NONE",
        )
        repo.comments[comment.id] = comment
        payload = self.gh.shapes.comment(repo, comment)
        return self.api.ok(payload, status=201, headers={"Location": payload["url"]})

    def get_comment(self, req: ApiRequest) -> ApiResponse:
        repo, comment = self._comment(req)
        return self.api.ok(self.gh.shapes.comment(repo, comment))

    def edit_comment(self, req: ApiRequest) -> ApiResponse:
        repo, comment = self._comment(req)
        body = _required_text(req.json(), "body", "IssueComment")
        comment.previous_body, comment.body = comment.body, body
        comment.updated_at = now_iso()
        return self.api.ok(self.gh.shapes.comment(repo, comment))

    def delete_comment(self, req: ApiRequest) -> ApiResponse:
        repo, comment = self._comment(req)
        del repo.comments[comment.id]
        repo.reactions = [r for r in repo.reactions if r.comment_id != comment.id]
        return ApiResponse(204)

    # --- reactions
    def list_reactions(self, req: ApiRequest) -> ApiResponse:
        repo, comment = self._comment(req)
        wanted = req.query.get("content")
        found = [
            self.gh.shapes.reaction(r)
            for r in repo.reactions
            if r.comment_id == comment.id and (wanted is None or r.content == wanted)
        ]
        return self.api.page(req, found)

    def create_reaction(self, req: ApiRequest) -> ApiResponse:
        repo, comment = self._comment(req)
        content = req.json().get("content")
        if content not in REACTION_CONTENTS:
            raise validation_failed("Reaction", "content", code="invalid")
        for existing in repo.reactions:
            same = (existing.comment_id, existing.user, existing.content)
            if same == (comment.id, self.gh.bot_login, content):
                return self.api.ok(self.gh.shapes.reaction(existing))
        reaction = Reaction(
            id=self.gh.ids(),
            comment_id=comment.id,
            user=self.gh.bot_login,
            is_bot=True,
            content=content,
        )
        repo.reactions.append(reaction)
        return self.api.ok(self.gh.shapes.reaction(reaction), status=201)

    # --- check runs
    def _check_run(self, req: ApiRequest) -> tuple[FakeRepo, CheckRun]:
        repo = self.api.repo(req)
        run = repo.check_runs.get(req.int_param("id"))
        if run is None:
            raise not_found()
        return repo, run

    def create_check_run(self, req: ApiRequest) -> ApiResponse:
        repo = self.api.repo(req)
        data = req.json()
        name = _required_text(data, "name", "CheckRun")
        head_sha = _required_text(data, "head_sha", "CheckRun")
        sha = repo.git.resolve(head_sha) if len(head_sha) == 40 else None
        if sha is None:
            raise HttpError(422, "No commit found for SHA: " + head_sha)
        run = CheckRun(id=self.gh.ids(), name=name, head_sha=sha)
        _apply_check_run_fields(run, data)
        repo.check_runs[run.id] = run
        return self.api.ok(self.gh.shapes.check_run(repo, run), status=201)

    def get_check_run(self, req: ApiRequest) -> ApiResponse:
        repo, run = self._check_run(req)
        return self.api.ok(self.gh.shapes.check_run(repo, run))

    def update_check_run(self, req: ApiRequest) -> ApiResponse:
        repo, run = self._check_run(req)
        data = req.json()
        if "name" in data:
            run.name = _required_text(data, "name", "CheckRun")
        _apply_check_run_fields(run, data)
        return self.api.ok(self.gh.shapes.check_run(repo, run))

    def list_annotations(self, req: ApiRequest) -> ApiResponse:
        repo, run = self._check_run(req)
        return self.api.page(req, [dict(a) for a in run.annotations])

    def list_check_runs(self, req: ApiRequest) -> ApiResponse:
        repo = self.api.repo(req)
        sha = repo.git.resolve(req.params["ref"])
        if sha is None:
            raise HttpError(422, f"No commit found for SHA: {req.params['ref']}")
        runs = sorted((r for r in repo.check_runs.values() if r.head_sha == sha), key=_by_id)
        if "check_name" in req.query:
            runs = [r for r in runs if r.name == req.query["check_name"]]
        if "status" in req.query:
            runs = [r for r in runs if r.status == req.query["status"]]
        if req.query.get("filter", "latest") == "latest":
            # "latest" keeps only the most recent run of each name, per app.
            newest = {(r.name, (r.app or {}).get("id")): r for r in runs}
            runs = [r for r in runs if newest[(r.name, (r.app or {}).get("id"))] is r]
        runs.reverse()  # newest first, as GitHub lists them
        page = self.api.page(req, [self.gh.shapes.check_run(repo, r) for r in runs])
        page.body = {"total_count": len(runs), "check_runs": page.body}
        return page


def _by_id(item: Any) -> int:
    return item.id


def _required_text(data: dict[str, Any], key: str, resource: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or (key != "body" and not value):
        raise validation_failed(resource, key)
    return value


ANNOTATION_LEVELS = ("notice", "warning", "failure")
# GitHub takes at most 50 annotations per create or update request.
MAX_ANNOTATIONS_PER_REQUEST = 50


def _valid_annotations(output: dict[str, Any]) -> list[dict[str, Any]]:
    annotations = output.get("annotations") or []
    if not isinstance(annotations, list) or len(annotations) > MAX_ANNOTATIONS_PER_REQUEST:
        raise validation_failed("CheckRun", "annotations", code="invalid")
    for item in annotations:
        if not isinstance(item, dict):
            raise validation_failed("CheckRun", "annotations", code="invalid")
        for key in ("path", "message"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise validation_failed("CheckRun", f"annotations.{key}")
        for key in ("start_line", "end_line"):
            if not isinstance(item.get(key), int) or item[key] < 1:
                raise validation_failed("CheckRun", f"annotations.{key}")
        if item["end_line"] < item["start_line"]:
            raise validation_failed("CheckRun", "annotations.end_line", code="invalid")
        if item.get("annotation_level") not in ANNOTATION_LEVELS:
            raise validation_failed("CheckRun", "annotations.annotation_level")
    return annotations


# GitHub's limits on a check run's requested actions.
ACTION_LIMITS = {"label": 20, "description": 40, "identifier": 20}
MAX_ACTIONS = 3


def _valid_actions(actions: Any) -> list[dict[str, str]]:
    if not isinstance(actions, list) or len(actions) > MAX_ACTIONS:
        raise validation_failed("CheckRun", "actions", code="invalid")
    for item in actions:
        for key, limit in ACTION_LIMITS.items():
            value = item.get(key) if isinstance(item, dict) else None
            if not isinstance(value, str) or not value or len(value) > limit:
                raise validation_failed("CheckRun", f"actions.{key}", code="invalid")
    return [{key: item[key] for key in ACTION_LIMITS} for item in actions]


def _apply_check_run_fields(run: CheckRun, data: dict[str, Any]) -> None:
    """Apply the writable fields of a create/update body, validating them as GitHub does.

    Annotations are appended on every request, as GitHub does; they are never replaced.
    """
    status = data.get("status")
    conclusion = data.get("conclusion")
    if status is not None and status not in CHECK_STATUSES:
        raise validation_failed("CheckRun", "status", code="invalid")
    if conclusion is not None and conclusion not in CHECK_CONCLUSIONS:
        raise validation_failed("CheckRun", "conclusion", code="invalid")
    if status == "completed" and conclusion is None and run.conclusion is None:
        raise validation_failed("CheckRun", "conclusion")
    if "output" in data:
        output = data["output"]
        if not isinstance(output, dict) or not output.get("title") or not output.get("summary"):
            raise validation_failed("CheckRun", "output")
        annotations = _valid_annotations(output)
        run.output = {k: output.get(k) for k in ("title", "summary", "text")}
        run.annotations.extend(
            {
                "path": a["path"],
                "start_line": a["start_line"],
                "end_line": a["end_line"],
                "start_column": a.get("start_column"),
                "end_column": a.get("end_column"),
                "annotation_level": a["annotation_level"],
                "title": a.get("title") or "",
                "message": a["message"],
                "raw_details": a.get("raw_details") or "",
                "blob_href": "",
            }
            for a in annotations
        )
    if "actions" in data:
        run.actions = _valid_actions(data["actions"])
    for key in ("details_url", "external_id", "started_at"):
        if key in data:
            setattr(run, key, data[key])
    if status is not None:
        run.status = status
        if status != "completed" and conclusion is None:
            run.conclusion = None  # back in progress (a re-run): no verdict yet
            run.completed_at = None
    if conclusion is not None:
        # Setting a conclusion completes the run, whatever status was sent.
        run.conclusion = conclusion
        run.status = "completed"
    if not run.history or run.history[-1] != run.status:
        run.history.append(run.status)
    if run.status == "completed":
        run.completed_at = data.get("completed_at") or run.completed_at or now_iso()
    elif "completed_at" in data:
        run.completed_at = data["completed_at"]
