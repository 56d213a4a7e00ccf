"""GitHub Actions in the test server: workflow_dispatch, runs, their jobs and artifacts.

The subset prbot's Actions engine uses, in GitHub's shapes: a dispatch creates a run (its
``display_title`` is the workflow's ``run-name``, here ``prbot <prbot_dispatch input>``) and
answers with its ids when asked (``return_run_details``, GitHub.com since 2025) or 204 as
older servers do (``details=False``); runs, jobs and artifacts are listed; an artifact's zip
downloads through a redirect as on GitHub. Tests finish runs with :meth:`finish` and build the
``workflow_run`` webhook with :meth:`workflow_run_event`. Runs prbot did not dispatch (a fork
PR's ``pull_request`` run on the head, a lint workflow, a run in another repository, a
writer's own dispatch of prbot's workflow) are made with :meth:`add_run`, each with the event,
title and actor its author had; a dispatch with an installation token has the App's bot as
its ``actor``, as on GitHub.

For CI signal: runs are listed per repository or workflow with GitHub's ``branch``,
``status``, ``event``, ``per_page`` and ``page`` filters (newest first, a ``Link`` header);
"re-run failed jobs" (``POST …/runs/{id}/rerun-failed-jobs``, 201 ``{}``) starts a new
attempt (``run_attempt`` one up) in which each failed or cancelled job gets a new id, while
``…/jobs?filter=all`` still lists the older attempts' jobs (``filter=latest``, the default:
each job's newest attempt). :meth:`seed_history` makes a base branch's completed runs from
letters, as ``bot.testing.buildkite_shapes.history`` spells Buildkite's.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

from bot.testing.host import RouteHost, ServerState
from bot.testing.rest_core import ApiRequest, ApiResponse, HttpError, not_found, paginate
from bot.testing.state import now_iso


@dataclass
class FakeRun:
    id: int
    repo: str
    workflow: str
    ref: str
    head_sha: str
    inputs: dict[str, Any]
    run_number: int
    status: str = "queued"
    conclusion: str | None = None
    jobs: dict[str, str | None] = field(default_factory=dict)  # job name -> conclusion
    job_ids: dict[str, int] = field(default_factory=dict)
    artifacts: dict[int, tuple[str, bytes]] = field(default_factory=dict)
    created_at: str = field(default_factory=now_iso)
    # What started the run: prbot's are workflow_dispatch; anything else is someone else's.
    event: str = "workflow_dispatch"
    # The run's name as its workflow's ``run-name`` made it; prbot's names its dispatch key.
    title: str | None = None
    # Who started it (GitHub's ``actor``): the App's bot for a dispatch with its installation
    # token, a person for one started by hand or a PR's push. A re-run keeps the actor and
    # names its own ``triggering_actor``.
    actor: str = "octocat"
    triggering_actor: str | None = None
    run_attempt: int = 1
    # Jobs of the earlier attempts, as GitHub lists them (``filter=all``).
    earlier: list[dict[str, Any]] = field(default_factory=list)

    @property
    def display_title(self) -> str:
        if self.title is not None:
            return self.title
        return f"prbot {self.inputs.get('prbot_dispatch', '')}".strip()


class RawResponse(ApiResponse):
    """Bytes as they are (an artifact's zip), not JSON."""

    def encoded(self) -> bytes:
        return self.body if isinstance(self.body, bytes) else b""


class ActionsState:
    def __init__(self, gh: ServerState) -> None:
        self.gh = gh
        self.runs: dict[int, FakeRun] = {}
        # False: answer dispatches with 204 and no run, as GHES before 3.18 does.
        self.details = True
        # False: a dispatch's run appears only at start_pending() (GitHub queues it a moment).
        self.immediate = True
        self.pending: list[FakeRun] = []
        self.dispatches: list[dict[str, Any]] = []
        self.reruns: list[int] = []  # run ids, one per "re-run failed jobs" asked over HTTP

    def start_pending(self) -> list[int]:
        """Create the runs of dispatches made while ``immediate`` was False."""
        with self.gh.lock:
            started = [run.id for run in self.pending]
            for run in self.pending:
                self.runs[run.id] = run
            self.pending.clear()
            return started

    # --- what tests do
    def add_run(
        self,
        repo: str,
        *,
        head_sha: str,
        title: str,
        event: str = "pull_request",
        workflow: str = "ci.yml",
        ref: str = "main",
        actor: str = "octocat",
    ) -> int:
        """A run prbot did not dispatch (a fork PR's workflow, a lint job): its id."""
        with self.gh.lock:
            run = FakeRun(
                self.gh.ids(),
                repo,
                workflow,
                ref,
                head_sha,
                {},
                len(self.runs) + 1,
                event=event,
                title=title,
                actor=actor,
            )
            self.runs[run.id] = run
            return run.id

    def seed_history(
        self,
        repo: str,
        patterns: dict[str, str],
        *,
        workflow: str = "prbot-gpu.yml",
        branch: str = "main",
        event: str = "push",
    ) -> list[int]:
        """Completed runs of ``branch``, oldest first in time, one per letter of the patterns
        (newest first, as ``bot.testing.buildkite_shapes.history``: P passed, F failed, T
        timed out, C cancelled, R failed then passed on a re-run, X failed on both attempts,
        - the job did not run); each job is named after its pattern's key. Run ids, newest
        first."""
        retry_letters = {"R": ("failure", "success"), "X": ("failure", "failure")}
        single = {"P": "success", "F": "failure", "T": "timed_out", "C": "cancelled"}
        length = max((len(p) for p in patterns.values()), default=0)
        made = []
        for i in reversed(range(length)):
            commit = f"{0xB000 + i:040x}"
            run_id = self.add_run(
                repo,
                head_sha=commit,
                title=f"Commit {i}",
                event=event,
                workflow=workflow,
                ref=branch,
            )
            letters = {k: (p[i] if i < len(p) else "-") for k, p in patterns.items()}
            first = {
                k: retry_letters[x][0] if x in retry_letters else single[x]
                for k, x in letters.items()
                if x != "-"
            }
            self.finish(run_id, _conclusion(first.values()), jobs=first)
            if any(x in retry_letters for x in letters.values()):
                # "Re-run failed jobs" runs every failed job again: those of one attempt
                # (F, T, C) end as they did, so they show two attempts, as on GitHub.
                self.rerun_failed(run_id)
                second = {
                    k: retry_letters[x][1] if x in retry_letters else first[k]
                    for k, x in letters.items()
                    if x in retry_letters or first.get(k) in FAILED_CONCLUSIONS
                }
                final = {**first, **second}
                self.finish(run_id, _conclusion(final.values()), jobs=second)
            made.append(run_id)
        return made[::-1]

    def rerun_failed(self, run_id: int) -> None:
        """A new attempt of the run: its failed and cancelled jobs queued again, new ids."""
        with self.gh.lock:
            run = self.runs[run_id]
            if run.status != "completed":
                raise HttpError(403, "The workflow run is not completed and cannot be re-run")
            failed = [n for n, c in run.jobs.items() if c in FAILED_CONCLUSIONS]
            if not failed:
                raise HttpError(403, "The workflow run has no failed jobs to re-run")
            run.earlier.extend(self.job_json(run, name) for name in run.jobs)
            run.run_attempt += 1
            run.status, run.conclusion = "queued", None
            for name in failed:
                run.job_ids[name] = self.gh.ids()
                run.jobs[name] = None

    def finish(
        self,
        run_id: int,
        conclusion: str = "success",
        *,
        jobs: dict[str, str] | None = None,
        artifacts: dict[str, dict[str, bytes]] | None = None,
    ) -> dict[str, Any]:
        """Complete a run (its jobs' conclusions, artifacts as ``{name: {file: bytes}}``);
        returns the ``workflow_run.completed`` payload to deliver."""
        with self.gh.lock:
            run = self.runs[run_id]
            run.status, run.conclusion = "completed", conclusion
            for name in jobs or {}:
                run.job_ids.setdefault(name, self.gh.ids())
            run.jobs.update(jobs or {})
            for name, files in (artifacts or {}).items():
                buffer = io.BytesIO()
                with zipfile.ZipFile(buffer, "w") as archive:
                    for filename, blob in files.items():
                        archive.writestr(filename, blob)
                run.artifacts[self.gh.ids()] = (name, buffer.getvalue())
            return self.workflow_run_event(run_id, "completed")

    def workflow_run_event(self, run_id: int, action: str) -> dict[str, Any]:
        with self.gh.lock:
            run = self.runs[run_id]
            repo = self.gh.repos[run.repo]
            return {
                "action": action,
                "workflow_run": self.run_json(run),
                "workflow": {"id": 1, "path": f".github/workflows/{run.workflow}"},
                "repository": self.gh.shapes.repository(repo),
                "installation": {"id": repo.installation_id},
                "sender": self.gh.shapes.user("octocat"),
            }

    # --- shapes
    def _person(self, login: str) -> dict[str, Any]:
        return self.gh.shapes.user(login, bot=login.endswith("[bot]"))

    def job_json(self, run: FakeRun, name: str) -> dict[str, Any]:
        """A job of the run's current attempt, as ``GET …/runs/{id}/jobs`` lists it."""
        conclusion = run.jobs[name]
        job_id = run.job_ids[name]
        html = f"{self.gh.url}/{run.repo}/actions/runs/{run.id}"
        return {
            "id": job_id,
            "run_id": run.id,
            "run_url": f"{self.gh.url}/repos/{run.repo}/actions/runs/{run.id}",
            "run_attempt": run.run_attempt,
            "node_id": f"CR_kwDO{job_id}",
            "head_sha": run.head_sha,
            "head_branch": run.ref,
            "url": f"{self.gh.url}/repos/{run.repo}/actions/jobs/{job_id}",
            "html_url": f"{html}/job/{job_id}",
            "status": "completed" if conclusion else run.status,
            "conclusion": conclusion,
            "created_at": run.created_at,
            "started_at": run.created_at,
            "completed_at": now_iso() if conclusion else None,
            "name": name,
            "steps": [],
            "check_run_url": f"{self.gh.url}/repos/{run.repo}/check-runs/{job_id}",
            "labels": ["self-hosted", "gpu"],
            "runner_id": None,
            "runner_name": None,
            "runner_group_id": None,
            "runner_group_name": None,
            "workflow_name": run.workflow,
        }

    def run_json(self, run: FakeRun) -> dict[str, Any]:
        base = f"{self.gh.url}/repos/{run.repo}/actions/runs/{run.id}"
        return {
            "id": run.id,
            "name": run.workflow,
            "display_title": run.display_title,
            "event": run.event,
            "status": run.status,
            "conclusion": run.conclusion,
            "head_branch": run.ref,
            "head_sha": run.head_sha,
            "run_number": run.run_number,
            "run_attempt": run.run_attempt,
            "actor": self._person(run.actor),
            "triggering_actor": self._person(run.triggering_actor or run.actor),
            "path": f".github/workflows/{run.workflow}",
            "pull_requests": [],  # always empty for workflow_dispatch (and fork PRs)
            "url": base,
            "html_url": f"{self.gh.url}/{run.repo}/actions/runs/{run.id}",
            "jobs_url": f"{base}/jobs",
            "artifacts_url": f"{base}/artifacts",
            "created_at": run.created_at,
            "updated_at": now_iso(),
        }


FAILED_CONCLUSIONS = ("failure", "cancelled", "timed_out", "startup_failure")


def _conclusion(jobs: Any) -> str:
    return "failure" if any(c in FAILED_CONCLUSIONS for c in jobs) else "success"


def register_actions_routes(api: RouteHost, repo_pattern: str) -> ActionsState:
    state = ActionsState(api.gh)
    add = api.router.add
    workflow = rf"{repo_pattern}/actions/workflows/(?P<workflow>[^/]+)"

    def dispatch(req: ApiRequest) -> ApiResponse:
        repo = api.repo(req)
        body = req.json()
        ref = body.get("ref")
        inputs = body.get("inputs") or {}
        if not isinstance(ref, str) or not isinstance(inputs, dict):
            raise HttpError(422, "Invalid request")
        if any(not isinstance(v, str) for v in inputs.values()) or len(inputs) > 25:
            raise HttpError(422, "inputs must be at most 25 strings")
        head = repo.branch_sha(ref)
        if head is None:
            raise HttpError(422, f"No ref found for: {ref}")
        run = FakeRun(
            state.gh.ids(),
            repo.full_name,
            req.params["workflow"],
            ref,
            head,
            dict(inputs),
            len(state.runs) + 1,
            # An installation token acts as the App's bot, as GitHub names it on the run.
            actor=state.gh.bot_login if req.installation_id is not None else "octocat",
        )
        state.dispatches.append({"workflow": run.workflow, **body})
        if not state.immediate:
            state.pending.append(run)
            return api.ok(None, status=204)
        state.runs[run.id] = run
        if body.get("return_run_details") and state.details:
            run_json = state.run_json(run)
            return api.ok(
                {
                    "workflow_run_id": run.id,
                    "run_url": run_json["url"],
                    "html_url": run_json["html_url"],
                }
            )
        return api.ok(None, status=204)

    def list_runs(req: ApiRequest) -> ApiResponse:
        """Newest first, filtered as GitHub filters (``status`` is a status or a conclusion),
        in pages with a Link header."""
        repo = api.repo(req)
        workflow = req.params.get("workflow")
        status = req.query.get("status")
        found = [
            state.run_json(run)
            for run in sorted(state.runs.values(), key=lambda r: -r.id)
            if run.repo == repo.full_name
            and (workflow is None or run.workflow == workflow)
            and req.query.get("event", run.event) == run.event
            and req.query.get("branch", run.ref) == run.ref
            and (status is None or status in (run.status, run.conclusion))
        ]
        chunk, headers = paginate(state.gh.url, req, found)
        return api.ok({"total_count": len(found), "workflow_runs": chunk}, headers=headers)

    def _run(req: ApiRequest) -> FakeRun:
        repo = api.repo(req)
        run = state.runs.get(req.int_param("id"))
        if run is None or run.repo != repo.full_name:
            raise not_found()
        return run

    def get_run(req: ApiRequest) -> ApiResponse:
        return api.ok(state.run_json(_run(req)))

    def list_jobs(req: ApiRequest) -> ApiResponse:
        run = _run(req)
        current = [state.job_json(run, name) for name in run.jobs]
        if req.query.get("filter", "latest") == "all":
            jobs = current + [
                job for job in run.earlier if job["id"] not in {j["id"] for j in current}
            ]
        elif req.query.get("filter", "latest") == "latest":
            jobs = current
        else:
            raise HttpError(422, "filter must be one of: latest, all")
        chunk, headers = paginate(state.gh.url, req, jobs)
        return api.ok({"total_count": len(jobs), "jobs": chunk}, headers=headers)

    def rerun_failed_jobs(req: ApiRequest) -> ApiResponse:
        run = _run(req)
        state.rerun_failed(run.id)
        state.reruns.append(run.id)
        return api.ok({}, status=201)

    def list_artifacts(req: ApiRequest) -> ApiResponse:
        run = _run(req)
        base = f"{state.gh.url}/repos/{run.repo}/actions/artifacts"
        listed = [
            {
                "id": artifact_id,
                "name": name,
                "size_in_bytes": len(blob),
                "archive_download_url": f"{base}/{artifact_id}/zip",
                "expired": False,
            }
            for artifact_id, (name, blob) in run.artifacts.items()
        ]
        return api.ok({"total_count": len(listed), "artifacts": listed})

    def download(req: ApiRequest) -> ApiResponse:
        repo = api.repo(req)
        wanted = req.int_param("id")
        for run in state.runs.values():
            if run.repo == repo.full_name and wanted in run.artifacts:
                return RawResponse(200, run.artifacts[wanted][1])
        raise not_found()

    def get_workflow(req: ApiRequest) -> ApiResponse:
        repo = api.repo(req)
        name = req.params["workflow"]
        url = f"{state.gh.url}/repos/{repo.full_name}/actions/workflows/{name}"
        return api.ok(
            {
                "id": abs(hash((repo.full_name, name))) % 10_000_000,
                "name": name,
                "path": f".github/workflows/{name}",
                "state": "active",
                "url": url,
                "html_url": f"{state.gh.url}/{repo.full_name}/actions/workflows/{name}",
            }
        )

    add("GET", workflow, get_workflow)
    add("POST", f"{workflow}/dispatches", dispatch)
    add("GET", f"{workflow}/runs", list_runs)
    add("GET", rf"{repo_pattern}/actions/runs", list_runs)
    add("POST", rf"{repo_pattern}/actions/runs/(?P<id>\d+)/rerun-failed-jobs", rerun_failed_jobs)
    add("GET", rf"{repo_pattern}/actions/runs/(?P<id>\d+)", get_run)
    add("GET", rf"{repo_pattern}/actions/runs/(?P<id>\d+)/jobs", list_jobs)
    add("GET", rf"{repo_pattern}/actions/runs/(?P<id>\d+)/artifacts", list_artifacts)
    add("GET", rf"{repo_pattern}/actions/artifacts/(?P<id>\d+)/zip", download)
    return state


def runs_json(state: ActionsState) -> str:
    """Every run, for a failing test's message."""
    return json.dumps([state.run_json(run) for run in state.runs.values()], indent=1)
