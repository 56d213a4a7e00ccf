"""Buildkite over its REST API (httpx): create a build for a PR head, read jobs and artifacts.

The build is created as vLLM's ``/ci run`` comment creates it: the commit and branch, the
``pull_request_*`` fields, ``VLLM_CI_ONLY_STEP_KEYS`` (a JSON list) so only the selected
steps and their dependencies run, and ``meta_data`` naming prbot's job so results can be
matched back. The API token goes in the Authorization header and nowhere else.

A build is prbot's only when Buildkite says prbot's token made it: ``source: api`` and its
``creator`` the token's own user (``GET /v2/user``, the ``read_user`` scope). Meta-data is no
proof (a PR's code sets it from inside any build it runs in), nor is ``source: api`` alone
(a maintainer's own token, or the repository's ``/ci run`` bot, makes API builds too).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import httpx

from bot.core.redact import redact_secrets
from bot.engines.base import (
    DISPATCH_META,
    Artifact,
    BuildList,
    BuildRef,
    BuildRequest,
    EngineError,
    JobState,
    register,
)
from bot.engines.buildkite_builds import PER_PAGE, BuildkiteBuilds, pipeline_settings

DEFAULT_API_URL = "https://api.buildkite.com"


def _pull_request_id(build: dict) -> str | None:
    pull = build.get("pull_request")
    return str(pull.get("id")) if isinstance(pull, dict) and pull.get("id") is not None else None


log = logging.getLogger(__name__)


@register("buildkite")
def from_settings(settings: Any, client: Any = None) -> BuildkiteEngine:
    """The pipeline named by ``PRBOT_BUILDKITE_*``; EngineError while any is missing."""
    named = pipeline_settings(settings)
    if named is None:
        raise EngineError("Buildkite is not configured (PRBOT_BUILDKITE_*)")
    return BuildkiteEngine(**named)


class BuildkiteEngine:
    name = "buildkite"
    retry_waits_for_build = False  # a job retry runs while the rest of the build does

    def __init__(
        self,
        *,
        organization: str,
        pipeline: str,
        token: str,
        api_url: str = DEFAULT_API_URL,
        client: httpx.Client | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.api = api_url.rstrip("/")
        self.base = f"{self.api}/v2/organizations/{organization}/pipelines/{pipeline}"
        self._own_user: str | None = None
        self._client = client or httpx.Client(timeout=timeout)
        # Reads of builds prbot did not make (history, the repository's own builds): the
        # bounded, streaming reader, with the same token.
        self.reader = BuildkiteBuilds(
            organization=organization,
            pipeline=pipeline,
            token=token,
            api_url=api_url,
            client=self._client,
        )
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        redact_secrets(token)

    def _call(self, method: str, url: str, **kwargs) -> httpx.Response:  # noqa: ANN003
        try:
            response = self._client.request(method, url, headers=self._headers, **kwargs)
        except httpx.HTTPError as exc:
            raise EngineError(
                f"Buildkite could not be reached: {exc.__class__.__name__}", transient=True
            ) from None
        if response.status_code >= 400:
            try:
                message = response.json().get("message")
            except ValueError:
                message = None
            raise EngineError(
                f"Buildkite answered {response.status_code}: {str(message or 'no message')[:200]}",
                transient=response.status_code >= 500 or response.status_code == 429,
            )
        return response

    def own_user(self) -> str:
        """The id of the user the API token belongs to (the ``creator`` of prbot's builds),
        asked once per engine."""
        if self._own_user is None:
            try:
                data = self._call("GET", f"{self.api}/v2/user").json()
            except EngineError as exc:
                raise EngineError(
                    f"{exc} (GET /v2/user: prbot's Buildkite token needs read_user to tell its "
                    "own builds from others')",
                    transient=exc.transient,
                ) from None
            user = data.get("id") if isinstance(data, dict) else None
            if not isinstance(user, str) or not user:
                raise EngineError("Buildkite's /v2/user named no user for prbot's token")
            self._own_user = user
        return self._own_user

    @staticmethod
    def _ref(data: dict) -> BuildRef:
        return BuildRef(
            "buildkite", str(data["id"]), data.get("number"), str(data.get("web_url", ""))
        )

    def create_build(self, request: BuildRequest) -> BuildRef:
        env = dict(request.env)
        env["VLLM_CI_ONLY_STEP_KEYS"] = json.dumps(list(request.step_keys))
        body = {
            "commit": request.head_sha,
            "branch": request.branch,
            "message": request.message,
            "env": env,
            "meta_data": dict(request.meta_data),
            "pull_request_id": request.pr_number,
            "pull_request_base_branch": request.base_branch,
            "pull_request_repository": f"https://github.com/{request.repo}.git",
            "pull_request_labels": list(request.labels),
            "ignore_pipeline_branch_filters": True,
        }
        return self._ref(self._call("POST", f"{self.base}/builds", json=body).json())

    def find_build(
        self, dispatch_key: str, commit: str, *, repo: str | None = None, pr: int | None = None
    ) -> BuildRef | None:
        """The build an earlier attempt created with this key: one made through the API
        (``source: api``) by prbot's token's own user (its ``creator``), never one whose
        meta-data a PR's code set from inside a build (``webhook``, ``trigger_job``: any
        build running PR code can), nor an API build another token made with the key. With
        ``pr``, the build's ``pull_request.id`` (set when it was created; no build step can
        change it) must be that PR: prbot's build for another PR at the same commit, whose
        code set its meta-data to this key, is not this dispatch's."""
        me = self.own_user()
        params = {f"meta_data[{DISPATCH_META}]": dispatch_key, "commit": commit}
        found = self._call("GET", f"{self.base}/builds", params=params).json()
        matching = [
            build
            for build in (found if isinstance(found, list) else [])
            if isinstance(build, dict)
            and build.get("source") == "api"
            and isinstance(build.get("creator"), dict)
            and build["creator"].get("id") == me
            and build.get("commit") == commit
            and (pr is None or _pull_request_id(build) == str(pr))
            and isinstance(build.get("number"), int)
            and (build.get("meta_data") or {}).get(DISPATCH_META) == dispatch_key
        ]
        # Newest first: the oldest is the one the dispatch made.
        return self._ref(min(matching, key=lambda b: b["number"])) if matching else None

    def jobs(self, build: BuildRef) -> list[JobState]:
        data = self._call("GET", f"{self.base}/builds/{build.number}").json()
        return [
            JobState(
                job.get("step_key"),
                str(job.get("state")),
                str(job.get("web_url", "")),
                str(job["id"]),
            )
            for job in data.get("jobs") or []
            if isinstance(job, dict) and job.get("type") == "script" and job.get("id")
        ]

    def retry_job(self, build: BuildRef, job_id: str) -> dict:
        """Buildkite's job retry: a finished job runs again on the same commit, in the same
        build; the answer is the new job (``retries_count`` one up)."""
        data = self._call("PUT", f"{self.base}/builds/{build.number}/jobs/{job_id}/retry").json()
        if not isinstance(data, dict):
            raise EngineError("Buildkite's retried job is not an object")
        return data

    def retry_failed(self, build: BuildRef, job_ids: Sequence[str]) -> dict[str, str]:
        """One job retry per failed job; a refused one is left out (and logged)."""
        retried = {}
        for job_id in job_ids:
            try:
                url = self.retry_job(build, job_id).get("web_url")
            except EngineError as exc:
                log.warning("retry of job %s in build %s refused: %s", job_id, build.id, exc)
                continue
            retried[job_id] = url if isinstance(url, str) else ""
        return retried

    @property
    def history_source(self) -> str:
        return self.reader.builds_url

    def head_build(self, build: BuildRef) -> dict[str, Any]:
        if not isinstance(build.number, int):
            raise EngineError(f"build {build.id} has no number to read it by")
        return self.reader.build(build.number)

    def branch_builds(self, repo: str, branch: str, *, limit: int) -> BuildList:
        """``GET …/builds?branch=&include_retried_jobs=true``, ``ceil(limit / 100)`` pages."""
        return self.reader.builds_for_branch(
            branch, max_pages=-(-limit // PER_PAGE), retried_jobs=True, partial=True
        )

    def builds_of_commit(self, repo: str, commit: str, *, max_pages: int) -> BuildList:
        return self.reader.builds_for_commit(commit, max_pages=max_pages)

    def artifacts(self, build: BuildRef, job: JobState) -> tuple[Artifact, ...]:
        listed = self._call(
            "GET", f"{self.base}/builds/{build.number}/jobs/{job.job_id}/artifacts"
        ).json()
        return tuple(
            Artifact(
                str(a["id"]),
                # The path keeps the folders (base/run-1.json and head/run-1.json both have
                # the filename run-1.json).
                str(a.get("path") or a["filename"]),
                int(a.get("file_size") or 0),
                str(a["download_url"]),
            )
            for a in (listed if isinstance(listed, list) else [])
            if isinstance(a, dict) and a.get("id") and a.get("download_url")
        )

    def result_files(
        self, build: BuildRef, job: JobState, *, limit: int, max_files: int
    ) -> tuple[list[tuple[str, bytes]], list[str]]:
        """The job's ``*.json`` artifacts by path (one per benchmark run) and its ``machine.csv``
        files (``prbot bench run``'s GPU records), bounded."""
        listed = sorted(
            (
                a
                for a in self.artifacts(build, job)
                if a.filename.endswith(".json")
                or a.filename.endswith("machine.csv")
                or a.filename.endswith("machine-end.csv")
            ),
            key=lambda a: a.filename,
        )
        files, problems = [], []
        for artifact in listed[:max_files]:
            try:
                files.append((artifact.filename, self.download(artifact, limit=limit)))
            except EngineError as exc:
                problems.append(f"{artifact.filename}: {exc}")
        if len(listed) > max_files:
            problems.append(f"{len(listed)} result files; the first {max_files} were read")
        return files, problems

    def download(self, artifact: Artifact, *, limit: int) -> bytes:
        if artifact.size > limit:
            raise EngineError(
                f"artifact {artifact.filename} is {artifact.size} bytes, over {limit}"
            )
        # Buildkite answers with a redirect to its storage; the URL came from its own API.
        response = self._call("GET", artifact.download_url, follow_redirects=True)
        if len(response.content) > limit:
            raise EngineError(f"artifact {artifact.filename} is over {limit} bytes")
        return response.content
