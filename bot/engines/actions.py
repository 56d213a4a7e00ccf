"""GitHub Actions as a CI engine: ``workflow_dispatch`` through PyGithub, results from runs.

The workflow (``PRBOT_ACTIONS_WORKFLOW``, default ``prbot-gpu.yml``) is dispatched on the PR's
**base** branch, so the workflow file that runs is the repository's reviewed one, never one a
PR edited; the commit to test comes in as an input. Its inputs: ``prbot_dispatch`` (the key
the run is matched back by; the workflow sets ``run-name: prbot ${{ inputs.prbot_dispatch }}``),
``commit``, ``pr``, ``steps`` (a JSON list of job names to run) and, for a benchmark,
``benchmark_config``, ``benchmark_backends``, ``benchmark_runs``, ``benchmark_compare``,
``benchmark_base_commit``, ``benchmark_against`` (deploy/gpu-bench/prbot-gpu.yml declares
them). Each job of the run is a step; JSON files inside the run's artifacts are benchmark results.

GitHub answers a dispatch with the run it created when asked (``return_run_details``,
PyGithub >= 2.10); an older server answers 204 with nothing, and the run is then found by
the key in its name, now or when its ``workflow_run`` event arrives. Found so, a run is
prbot's only when GitHub names the App's bot as its ``actor`` (who started it; a re-run keeps
it): a writer can dispatch the same workflow with the same title, but only the App's
installation token starts a run as its bot.
"""

from __future__ import annotations

import io
import json
import re
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import requests
from github import Github, GithubException

from bot.core.redact import redact_secrets
from bot.engines.base import (
    Artifact,
    BuildList,
    BuildRef,
    BuildRequest,
    EngineError,
    JobState,
    register,
)
from bot.jobs.actions_runs import build_of_run
from bot.jobs.records import PENDING_BUILD_PREFIX, pending_build_id

DEFAULT_WORKFLOW = "prbot-gpu.yml"
DISPATCH_KEY = re.compile(r"\bprbot-[0-9a-f]{32}\b")
ENV_INPUTS = {
    "PRBOT_BENCHMARK_CONFIG": "benchmark_config",
    "PRBOT_BENCHMARK_BACKENDS": "benchmark_backends",
    "PRBOT_BENCHMARK_RUNS": "benchmark_runs",
    "PRBOT_BENCHMARK_COMPARE": "benchmark_compare",
    "PRBOT_BENCHMARK_BASE_COMMIT": "benchmark_base_commit",
    "PRBOT_BENCHMARK_AGAINST": "benchmark_against",
}
MAX_ZIP_MEMBERS = 200
PER_PAGE = 100  # GitHub's largest page
MAX_JOB_PAGES = 5  # a run's jobs, every attempt: a wide matrix re-run once fits
# A completed run attempt's jobs never change: kept across history reads (per process), so a
# warm read lists the runs and asks only for the jobs of runs it has not seen.
MAX_KEPT_RUN_JOBS = 4000


class _RunJobs:
    """Jobs of completed run attempts by (API, repository, run id, attempt), bounded LRU."""

    def __init__(self, size: int = MAX_KEPT_RUN_JOBS) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[str, str, int, int], list] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, int, int]) -> list | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: tuple[str, str, int, int], jobs: list) -> None:
        with self._lock:
            self._kept[key] = jobs
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)


RUN_JOBS = _RunJobs()


def _login(user: Any) -> str | None:
    return user.get("login") if isinstance(user, dict) else None


def dispatch_key_in(title: str | None) -> str | None:
    found = DISPATCH_KEY.search(title or "")
    return found.group(0) if found else None


@register("actions")
def from_settings(settings: Any, client: Any = None) -> ActionsEngine:
    """The repository's workflow, dispatched with the installation's own client."""
    if client is None:
        raise EngineError("GitHub Actions needs the App's installation")
    return ActionsEngine(
        gh=client.gh,
        token=client.token(),
        api_url=settings.github_api_url,
        workflow=settings.ci.actions_workflow,
        actor=client.bot_login(),
    )


class ActionsEngine:
    name = "actions"
    retry_waits_for_build = True  # GitHub re-runs failed jobs of a completed run only

    def __init__(
        self,
        *,
        gh: Github,
        token: str,
        api_url: str,
        workflow: str = DEFAULT_WORKFLOW,
        actor: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.gh = gh
        self.workflow = workflow
        # The App's bot ('<slug>[bot]'): the actor of every run prbot's dispatch starts.
        # None (unknown): no run is ever found by its name.
        self.actor = actor
        self._token = token
        self._api = urlsplit(api_url)
        self._http = httpx.Client(timeout=timeout)
        redact_secrets(token)

    def _repo(self, full_name: str):  # noqa: ANN202 - PyGithub Repository
        return self.gh.get_repo(full_name)

    def _json(self, repo: str, path: str, *, method: str = "GET") -> dict:
        # The requester takes the path as is: no lookup of the repository first.
        try:
            _, data = self.gh.requester.requestJsonAndCheck(
                method, f"/repos/{repo}{path}", input={} if method == "POST" else None
            )
        except GithubException as exc:
            message = (exc.data or {}).get("message") if isinstance(exc.data, dict) else None
            raise EngineError(
                f"GitHub Actions answered {exc.status}"
                + (f": {str(message)[:200]}" if message else ""),
                transient=exc.status >= 500,
            ) from None
        except requests.RequestException as exc:
            raise EngineError(
                f"GitHub could not be reached: {type(exc).__name__}", transient=True
            ) from None
        return data if isinstance(data, dict) else {}

    def create_build(self, request: BuildRequest) -> BuildRef:
        key = request.meta_data.get("prbot_dispatch", "")
        inputs = {
            "prbot_dispatch": key,
            "commit": request.head_sha,
            "pr": str(request.pr_number),
            "steps": json.dumps(list(request.step_keys)),
        }
        inputs.update({ENV_INPUTS[k]: v for k, v in request.env.items() if k in ENV_INPUTS})
        workflow = self._repo(request.repo).get_workflow(self.workflow)
        try:
            run = workflow.create_dispatch(
                request.base_branch, inputs, throw=True, return_run_details=True
            )
        except GithubException as exc:
            message = (exc.data or {}).get("message") if isinstance(exc.data, dict) else None
            raise EngineError(
                f"GitHub Actions answered {exc.status}: {str(message or 'no message')[:200]}",
                transient=exc.status >= 500 or exc.status == 429,
            ) from None
        if run is not True and getattr(run, "id", None):
            return BuildRef("actions", f"{request.repo}:{run.id}", None, str(run.html_url or ""))
        found = self.find_build(key, request.head_sha, repo=request.repo)
        return found or BuildRef("actions", pending_build_id(key), None, "")

    def find_build(
        self, dispatch_key: str, commit: str, *, repo: str, pr: int | None = None
    ) -> BuildRef | None:
        """The run a dispatch with this key made: a ``workflow_dispatch`` run of prbot's
        workflow in ``repo`` whose actor is the App's bot, never a run of another event
        that merely took the name (a fork PR's ``pull_request`` workflow can), nor a
        writer's own dispatch of the workflow with the key (its actor is the writer).
        (``pr`` is not checked: a run's inputs are not in GitHub's listing, and only prbot's
        dispatch starts a run as the App's bot.)"""
        if self.actor is None:
            return None
        path = f"/actions/workflows/{self.workflow}/runs?event=workflow_dispatch&per_page=100"
        data = self._json(repo, path)
        made = [
            run
            for run in data.get("workflow_runs") or []
            if isinstance(run, dict)
            and isinstance(run.get("id"), int)
            and run.get("event") == "workflow_dispatch"
            and run.get("path") == f".github/workflows/{self.workflow}"
            and dispatch_key_in(run.get("display_title")) == dispatch_key
            and _login(run.get("actor")) == self.actor
        ]
        if not made:
            return None
        first = min(made, key=lambda run: run["id"])  # a writer's later copy is not prbot's
        number = first.get("run_number")
        return BuildRef(
            "actions",
            f"{repo}:{first['id']}",
            number if isinstance(number, int) and not isinstance(number, bool) else None,
            str(first.get("html_url") or ""),
        )

    @staticmethod
    def _split(build: BuildRef) -> tuple[str, str] | None:
        if build.id.startswith(PENDING_BUILD_PREFIX) or ":" not in build.id:
            return None
        repo, run_id = build.id.rsplit(":", 1)
        return repo, run_id

    def jobs(self, build: BuildRef) -> list[JobState]:
        where = self._split(build)
        if where is None:
            return []
        repo, run_id = where
        data = self._json(repo, f"/actions/runs/{run_id}/jobs")
        return [
            JobState(
                str(job.get("name")),
                str(job.get("conclusion") or job.get("status") or "queued"),
                str(job.get("html_url") or ""),
                str(job.get("id")),
            )
            for job in data.get("jobs") or []
            if isinstance(job, dict) and job.get("id") is not None
        ]

    # --- CI signal: the head run with every attempt, the base branch's runs, one re-run.
    @property
    def history_source(self) -> str:
        return f"actions:{self._api.scheme}://{self._api.netloc}:{self.workflow}"

    def _all_jobs(self, repo: str, run_id: int | str) -> list:
        """Every attempt's jobs of one run (``filter=all``), in pages of 100; a run with more
        than ``MAX_JOB_PAGES`` pages is an EngineError (a step missing from a run could turn
        a broken step's latest failures into passes)."""
        jobs: list = []
        for page in range(1, MAX_JOB_PAGES + 1):
            data = self._json(
                repo, f"/actions/runs/{run_id}/jobs?filter=all&per_page={PER_PAGE}&page={page}"
            )
            listed = data.get("jobs")
            listed = listed if isinstance(listed, list) else []
            jobs.extend(job for job in listed if isinstance(job, dict))
            if len(listed) < PER_PAGE:
                return jobs
        raise EngineError(f"run {run_id} has more than {MAX_JOB_PAGES * PER_PAGE} jobs")

    def head_build(self, build: BuildRef) -> dict[str, Any]:
        """prbot's run with every attempt of its jobs (one call); dispatched on the base
        branch, so its commit is left out (the PR head is an input the API does not show)."""
        where = self._split(build)
        if where is None:
            raise EngineError(f"run {build.id} is not known yet")
        repo, run_id = where
        jobs = self._all_jobs(repo, run_id)
        # The run is done when the newest attempt of every job is (no run call needed).
        newest: dict[object, tuple[int, dict]] = {}
        for job in jobs:
            attempt = job.get("run_attempt")
            attempt = attempt if isinstance(attempt, int) else 0
            if attempt >= newest.get(job.get("name"), (-1, {}))[0]:
                newest[job.get("name")] = (attempt, job)
        done = all(job.get("status") == "completed" for _, job in newest.values())
        run = {
            "id": run_id,
            "html_url": build.web_url,
            "status": "completed" if done else "in_progress",
            "conclusion": "failure" if done else None,
        }
        return build_of_run(run, jobs, commit="")

    def branch_builds(self, repo: str, branch: str, *, limit: int) -> BuildList:
        """The base branch's completed runs of prbot's workflow, newest first, as builds:
        ``GET …/actions/workflows/{workflow}/runs?branch=&status=completed`` (at most
        ``ceil(limit / 100) + 1`` pages; dispatched runs, prbot's among them, test their
        ``commit`` input rather than the branch, and are left out), then each run's jobs
        with ``filter=all`` (kept per completed attempt). A failure half-way returns what
        was read, with ``stopped``."""
        runs: list[dict] = []
        pages = 0
        max_pages = -(-limit // PER_PAGE) + 1
        more = True
        path = (
            f"/actions/workflows/{quote(self.workflow)}/runs?branch={quote(branch)}"
            f"&status=completed&per_page={PER_PAGE}"
        )
        try:
            while more and pages < max_pages and len(runs) < limit:
                data = self._json(repo, f"{path}&page={pages + 1}")
                pages += 1
                found = data.get("workflow_runs")
                found = found if isinstance(found, list) else []
                listed = [r for r in found if isinstance(r, dict)]
                more = len(listed) == PER_PAGE
                # A dispatched run tests its `commit` input (prbot's: a PR head), not the
                # branch tip it names: never the branch's history.
                runs.extend(
                    r
                    for r in listed
                    if isinstance(r.get("id"), int)
                    and not isinstance(r.get("id"), bool)
                    and r.get("event") != "workflow_dispatch"
                )
        except EngineError as exc:
            return BuildList((), True, pages, f"page {pages + 1} of the runs: {exc}")
        runs = runs[:limit]
        builds = []
        for run in runs:
            attempt = run.get("run_attempt")
            key = (self.history_source, repo, run["id"], attempt if isinstance(attempt, int) else 1)
            jobs = RUN_JOBS.get(key)
            if jobs is None:
                try:
                    jobs = self._all_jobs(repo, run["id"])
                except EngineError as exc:
                    stopped = f"the jobs of run {run['id']}: {exc}"
                    return BuildList(tuple(builds), True, pages, stopped)
                RUN_JOBS.put(key, jobs)
            builds.append(build_of_run(run, jobs))
        return BuildList(tuple(builds), more, pages)

    def builds_of_commit(self, repo: str, commit: str, *, max_pages: int) -> BuildList:
        """Nothing: prbot's workflow runs only when prbot dispatches it, so the repository
        has no runs of its own of a head's steps to report."""
        return BuildList(())

    def retry_failed(self, build: BuildRef, job_ids: Sequence[str]) -> dict[str, str]:
        """GitHub's "re-run failed jobs" of the run (every failed job and its dependents, in
        one new attempt): one call for all of them; the new attempt's jobs get their links
        when its ``workflow_run`` news is read."""
        where = self._split(build)
        if where is None or not job_ids:
            return {}
        repo, run_id = where
        self._json(repo, f"/actions/runs/{run_id}/rerun-failed-jobs", method="POST")
        return dict.fromkeys(job_ids, "")

    def artifacts(self, build: BuildRef, job: JobState) -> tuple[Artifact, ...]:
        where = self._split(build)
        if where is None:
            return ()
        repo, run_id = where
        data = self._json(repo, f"/actions/runs/{run_id}/artifacts")
        return tuple(
            Artifact(
                str(a["id"]),
                str(a.get("name") or a["id"]),
                int(a.get("size_in_bytes") or 0),
                str(a.get("archive_download_url") or ""),
            )
            for a in data.get("artifacts") or []
            if isinstance(a, dict) and a.get("id") is not None and not a.get("expired")
        )

    def download(self, artifact: Artifact, *, limit: int) -> bytes:
        if artifact.size > limit:
            raise EngineError(
                f"artifact {artifact.filename} is {artifact.size} bytes, over {limit}"
            )
        target = urlsplit(artifact.download_url)
        # The token goes to the API's own host only (httpx drops it on a redirect elsewhere).
        if (target.scheme, target.netloc) != (self._api.scheme, self._api.netloc):
            raise EngineError(f"artifact {artifact.filename} is not on {self._api.netloc}")
        try:
            response = self._http.get(
                artifact.download_url,
                headers={"Authorization": f"Bearer {self._token}"},
                follow_redirects=True,
            )
        except httpx.HTTPError as exc:
            raise EngineError(
                f"GitHub could not be reached: {type(exc).__name__}", transient=True
            ) from None
        if response.status_code >= 400 or len(response.content) > limit:
            raise EngineError(f"artifact {artifact.filename}: {response.status_code}, not read")
        return response.content

    def result_files(self, build: BuildRef, job: JobState, *, limit: int, max_files: int):  # noqa: ANN201
        """The JSON files inside the run's artifacts (each a zip), bounded in count and size."""
        files: list[tuple[str, bytes]] = []
        problems: list[str] = []
        for artifact in self.artifacts(build, job):
            try:
                archive = zipfile.ZipFile(io.BytesIO(self.download(artifact, limit=limit)))
                members = [
                    m
                    for m in archive.infolist()
                    if m.filename.endswith((".json", "/machine.csv", "/machine-end.csv"))
                ]
                for member in members[:MAX_ZIP_MEMBERS]:
                    if len(files) >= max_files:
                        break
                    name = f"{artifact.filename}/{member.filename}"
                    with archive.open(member) as handle:
                        data = handle.read(limit + 1)  # the header's size may lie
                    if len(data) > limit:
                        problems.append(f"{name}: over {limit} bytes")
                        continue
                    files.append((name, data))
            except (EngineError, zipfile.BadZipFile) as exc:
                problems.append(f"{artifact.filename}: {exc}")
        return files, problems
