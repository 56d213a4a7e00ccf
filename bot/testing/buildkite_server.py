"""A local Buildkite for tests and ``prbot demo``: the REST subset prbot uses, over real HTTP.

    with FakeBuildkite(token="bk-api", webhook_url=..., webhook_token="bk-hook") as bk:
        engine = BuildkiteEngine(organization="acme", pipeline="ci", token="bk-api",
                                 api_url=bk.url)
        ref = engine.create_build(request)            # one job per VLLM_CI_ONLY_STEP_KEYS key
        bk.finish_job(ref.number, "v1-attention-b200", "passed",
                      artifacts={"results.json": b"[...]"})   # sends a signed job.finished

Builds are created with the fields vLLM's ``/ci run`` sends; ``add_build`` makes one the
repository's own CI made (a push, vLLM's own ``/ci run``). The build list filters by commit,
branch and meta-data, newest first, in pages chained by a ``Link`` header; ``list_status``
makes it answer 401, 404 or 500 instead. Artifacts download through a redirect, as
Buildkite's do. Every request is counted, so tests can assert "one create per
selected build, none on a replay". A build made through the API says ``source: api``;
``add_build``'s say ``webhook`` and carry whatever meta-data the PR's code set. Each API
token belongs to a user (``GET /v2/user`` says which, as Buildkite's does); a build made
through the API names that user as its ``creator``. ``add_token`` adds another user's token
(a maintainer's own, or the repository's ``/ci run`` bot's), whose API builds are
``source: api`` too, with their own creator. Webhooks go out signed, or with the plain token
(``webhook_mode="token"``).

Base-branch history: ``seed_history(builds)`` adds finished builds already in the REST
shape (``bot.testing.buildkite_shapes.history``: flaky, broken and healthy steps, retried
jobs included), listed and read like the others. A job retry (``PUT …/jobs/{id}/retry``)
marks the job retried and adds its next attempt; retried jobs are shown only with
``include_retried_jobs=true``, as on Buildkite. ``stall_from_page`` makes the build list hang
from that page on (an API that times out half-way).
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from bot.events.buildkite import sign

FINISHED = ("passed", "failed", "timed_out", "canceled")


def buildkite_time() -> str:
    """Buildkite's timestamps: ISO 8601 in UTC with milliseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class FakeJob:
    id: str
    step_key: str
    state: str = "scheduled"
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    name: str | None = None
    retried_in: str | None = None  # the job that retried this one
    retries_count: int | None = None
    finished_at: str | None = None

    def to_json(self, number: int, web: str) -> dict[str, Any]:
        done = self.state in FINISHED
        return {
            "id": self.id,
            "type": "script",
            "name": self.name or self.step_key,
            "step_key": self.step_key,
            "state": self.state,
            "soft_failed": False,
            "exit_status": (0 if self.state == "passed" else 1) if done else None,
            "retried": self.retried_in is not None,
            "retried_in_job_id": self.retried_in,
            "retries_count": self.retries_count,
            "parallel_group_index": None,
            "web_url": f"{web}/builds/{number}#{self.id}",
            "finished_at": self.finished_at,
        }


@dataclass
class FakeBuild:
    id: str
    number: int
    body: dict[str, Any]
    jobs: list[FakeJob]
    state: str = "scheduled"
    created_at: str = "2026-01-01T00:00:00.000Z"
    source: str = "api"
    finished_at: str | None = None
    # The user whose API token created the build (Buildkite's ``creator``); None for a
    # build of a push (``source: webhook``).
    creator: dict[str, Any] | None = None

    def current(self, step_key: str) -> FakeJob:
        """The step's latest attempt (the one its last retry made, if any)."""
        return next(j for j in self.jobs if j.step_key == step_key and j.retried_in is None)

    def to_json(
        self, base: str, web: str, *, jobs: bool = True, retried: bool = False
    ) -> dict[str, Any]:
        shown = {
            "id": self.id,
            "number": self.number,
            "state": self.state,
            "blocked": False,
            "source": self.source,
            "creator": self.creator,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "commit": self.body.get("commit"),
            "branch": self.body.get("branch"),
            "message": self.body.get("message"),
            "env": self.body.get("env", {}),
            "meta_data": self.body.get("meta_data", {}),
            "url": f"{base}/builds/{self.number}",
            "web_url": f"{web}/builds/{self.number}",
            "pull_request": {
                "id": str(self.body.get("pull_request_id")),
                "base": self.body.get("pull_request_base_branch"),
                "repository": self.body.get("pull_request_repository"),
            },
        }
        if jobs:
            shown["jobs"] = [
                job.to_json(self.number, web)
                for job in self.jobs
                if retried or job.retried_in is None
            ]
        return shown


def _listed(body: dict[str, Any], *, jobs: bool, retried: bool) -> dict[str, Any]:
    """A seeded build as the API shows it: without jobs, or without retried ones."""
    if not jobs:
        return {k: v for k, v in body.items() if k != "jobs"}
    if retried or not isinstance(body.get("jobs"), list):
        return body
    return {**body, "jobs": [j for j in body["jobs"] if not j.get("retried")]}


class FakeBuildkite:
    """Buildkite's REST subset for one organization and pipeline, on 127.0.0.1."""

    def __init__(
        self,
        *,
        token: str = "bk-api-token",
        organization: str = "acme",
        pipeline: str = "ci",
        webhook_url: str | None = None,
        webhook_token: str = "bk-webhook-token",
        webhook_mode: str = "signature",
    ) -> None:
        self.token, self.organization, self.pipeline = token, organization, pipeline
        self.webhook_url, self.webhook_token = webhook_url, webhook_token
        # How webhooks prove themselves: "signature" (X-Buildkite-Signature with a timestamp)
        # or "token" (the plain X-Buildkite-Token), as Buildkite's webhook settings choose.
        self.webhook_mode = webhook_mode
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.lock = threading.RLock()
        self.builds: dict[int, FakeBuild] = {}
        self.blobs: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []
        self.deliveries: list[int] = []  # status codes prbot answered to each webhook
        # A status the build list answers with instead of builds (401, 404, 500...).
        self.list_status: int | None = None
        # A status build creation answers with instead (503: Buildkite down for a moment).
        self.create_status: int | None = None
        self.seeded: dict[int, dict[str, Any]] = {}  # finished builds in the REST shape
        self.stall_from_page: int | None = None
        self.stall_seconds = 2.0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        # API token -> its user, in the shape of Buildkite's GET /v2/user.
        self.users: dict[str, dict[str, Any]] = {}
        self.add_token(token, "prbot CI")

    def add_token(self, token: str, name: str) -> dict[str, Any]:
        """Another user's API token; returns that user (``creator`` of the builds it makes)."""
        user = {
            "id": str(uuid.uuid4()),
            "graphql_id": f"VXNlci0t{uuid.uuid4().hex[:12]}",
            "name": name,
            "email": f"{name.lower().replace(' ', '-')}@example.com",
            "avatar_url": "https://www.gravatar.com/avatar/0",
            "created_at": "2025-01-01T00:00:00.000Z",
        }
        with self.lock:
            self.users[token] = user
        return user

    @property
    def pipeline_path(self) -> str:
        return f"/v2/organizations/{self.organization}/pipelines/{self.pipeline}"

    # --- the HTTP side
    def _app(self) -> FastAPI:
        app = FastAPI()
        base = self.pipeline_path
        web = f"{self.url}/web/{self.organization}/{self.pipeline}"

        def user_of(request: Request) -> dict[str, Any] | None:
            header = request.headers.get("authorization") or ""
            with self.lock:
                return self.users.get(header.removeprefix("Bearer ")) if header else None

        def authorized(request: Request) -> bool:
            return user_of(request) is not None

        @app.middleware("http")
        async def count(request: Request, call_next):  # noqa: ANN001, ANN202
            with self.lock:
                self.calls.append((request.method, request.url.path))
            if request.url.path.startswith("/v2/") and not authorized(request):
                return JSONResponse({"message": "Authentication required"}, status_code=401)
            return await call_next(request)

        @app.post(f"{base}/builds")
        async def create_build(request: Request) -> Response:
            if self.create_status is not None:
                return JSONResponse({"message": "Unavailable"}, status_code=self.create_status)
            body = await request.json()
            keys = json.loads((body.get("env") or {}).get("VLLM_CI_ONLY_STEP_KEYS") or "[]")
            with self.lock:
                number = self._next_number()
                build = FakeBuild(
                    str(uuid.uuid4()),
                    number,
                    body,
                    [FakeJob(str(uuid.uuid4()), key) for key in keys],
                    creator=user_of(request),
                )
                self.builds[number] = build
                return JSONResponse(build.to_json(self.url + base, web), status_code=201)

        @app.get("/v2/user")
        def current_user(request: Request) -> Response:
            return JSONResponse(user_of(request))

        @app.get(f"{base}/builds")
        def list_builds(request: Request) -> Response:
            # Buildkite's filters (meta_data[name]=value, commit, branch), newest first, in
            # pages (page, per_page up to 100) chained by a Link header, as the real API.
            if self.list_status is not None:
                message = {401: "Authentication required", 404: "No pipeline found"}
                text = message.get(self.list_status, "Internal server error")
                return JSONResponse({"message": text}, status_code=self.list_status)
            query = request.query_params
            wanted = {
                key[len("meta_data[") : -1]: value
                for key, value in query.items()
                if key.startswith("meta_data[") and key.endswith("]")
            }
            commit, branch = query.get("commit"), query.get("branch")
            per_page = max(1, min(int(query.get("per_page") or 30), 100))
            page = max(1, int(query.get("page") or 1))
            jobs = query.get("exclude_jobs") != "true"
            retried = query.get("include_retried_jobs") == "true"
            if self.stall_from_page is not None and page >= self.stall_from_page:
                time.sleep(self.stall_seconds)
            with self.lock:
                every = {
                    **{n: _listed(b, jobs=jobs, retried=retried) for n, b in self.seeded.items()},
                    **{
                        n: b.to_json(self.url + base, web, jobs=jobs, retried=retried)
                        for n, b in self.builds.items()
                    },
                }
            matching = [
                body
                for _, body in sorted(every.items(), reverse=True)
                if (commit is None or body.get("commit") == commit)
                and (branch is None or body.get("branch") == branch)
                and all((body.get("meta_data") or {}).get(k) == v for k, v in wanted.items())
            ]
            found = matching[(page - 1) * per_page : page * per_page]
            headers = {}
            if page * per_page < len(matching):
                following = dict(query.items()) | {"page": str(page + 1), "per_page": str(per_page)}
                link = f"{self.url}{base}/builds?{urlencode(following)}"
                headers["Link"] = f'<{link}>; rel="next"'
            return JSONResponse(found, headers=headers)

        @app.get(f"{base}/builds/{{number}}")
        def get_build(number: int, request: Request) -> Response:
            retried = request.query_params.get("include_retried_jobs") == "true"
            with self.lock:
                build = self.builds.get(number)
                if build is not None:
                    return JSONResponse(build.to_json(self.url + base, web, retried=retried))
                seeded = self.seeded.get(number)
                if seeded is None:
                    return JSONResponse({"message": "No build found"}, status_code=404)
                return JSONResponse(_listed(seeded, jobs=True, retried=retried))

        @app.put(f"{base}/builds/{{number}}/jobs/{{job_id}}/retry")
        def retry_job(number: int, job_id: str) -> Response:
            with self.lock:
                build = self.builds.get(number)
                job = next((j for j in build.jobs if j.id == job_id), None) if build else None
                if build is None or job is None:
                    return JSONResponse({"message": "No job found"}, status_code=404)
                if job.retried_in is not None or job.state not in FINISHED:
                    return JSONResponse(
                        {"message": "Only a finished job that was not retried can be retried"},
                        status_code=422,
                    )
                again = FakeJob(
                    str(uuid.uuid4()),
                    job.step_key,
                    name=job.name,
                    retries_count=(job.retries_count or 0) + 1,
                )
                job.retried_in = again.id
                build.jobs.append(again)
                build.state = "running"
                return JSONResponse(again.to_json(number, web))

        @app.get(f"{base}/builds/{{number}}/jobs/{{job_id}}/artifacts")
        def list_artifacts(number: int, job_id: str) -> Response:
            with self.lock:
                build = self.builds.get(number)
                job = next((j for j in build.jobs if j.id == job_id), None) if build else None
                if job is None:
                    return JSONResponse({"message": "No job found"}, status_code=404)
                return JSONResponse(job.artifacts)

        @app.get("/artifacts/{artifact_id}/download")
        def download(artifact_id: str) -> Response:
            # Buildkite redirects to its storage, on another host in real life, with a signed
            # URL whose query string is a short-lived credential.
            signed = f"{self.url}/storage/{artifact_id}?X-Amz-Signature={uuid.uuid4().hex}"
            return RedirectResponse(signed, status_code=302)

        @app.get("/storage/{artifact_id}")
        def storage(artifact_id: str) -> Response:
            with self.lock:
                blob = self.blobs.get(artifact_id)
            if blob is None:
                return Response(status_code=404)
            return Response(blob, media_type="application/octet-stream")

        return app

    # --- lifecycle
    def start(self) -> FakeBuildkite:
        config = uvicorn.Config(self._app(), lifespan="off", log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the Buildkite test server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> FakeBuildkite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what tests do
    def creates(self) -> list[dict[str, Any]]:
        """The bodies of every build created, in order."""
        with self.lock:
            return [build.body for build in self.builds.values()]

    def count_calls(self, method: str | None = None, path_suffix: str = "") -> int:
        with self.lock:
            return sum(
                1
                for m, path in self.calls
                if (method is None or m == method) and path.endswith(path_suffix)
            )

    def _next_number(self) -> int:
        return max([*self.builds, *self.seeded, 0]) + 1

    def seed_history(self, builds: list[dict[str, Any]]) -> None:
        """Add finished builds (REST shape, every attempt of their jobs) to the list."""
        with self.lock:
            for body in builds:
                self.seeded[int(body["number"])] = body

    def add_build(
        self,
        commit: str,
        jobs: dict[str, str],
        *,
        branch: str = "main",
        message: str = "",
        meta_data: dict[str, str] | None = None,
        state: str | None = None,
        pull_request_id: int | None = None,
        source: str = "webhook",
        creator: dict[str, Any] | None = None,
    ) -> int:
        """A build someone else made (the repository's own CI: a push, ``/ci run``), with
        its jobs in the given states (step key -> state); returns its number."""
        with self.lock:
            number = self._next_number()
            body = {
                "commit": commit,
                "branch": branch,
                "message": message,
                "meta_data": dict(meta_data or {}),
                "pull_request_id": pull_request_id,
            }
            fake_jobs = [
                FakeJob(str(uuid.uuid4()), key, job_state) for key, job_state in jobs.items()
            ]
            if state is None:
                states = set(jobs.values())
                state = "running" if states - set(FINISHED) else "passed"
                if states & {"failed", "timed_out"}:
                    state = "failed" if not states - set(FINISHED) else "failing"
            self.builds[number] = FakeBuild(
                str(uuid.uuid4()), number, body, fake_jobs, state, source=source, creator=creator
            )
            return number

    def finish_job(
        self,
        number: int,
        step_key: str,
        state: str = "passed",
        *,
        artifacts: dict[str, bytes] | None = None,
        deliver: bool = True,
    ) -> dict[str, Any]:
        """Finish one job (its artifacts stored) and send the signed ``job.finished``."""
        with self.lock:
            build = self.builds[number]
            job = build.current(step_key)
            job.state, job.finished_at = state, buildkite_time()
            for filename, blob in (artifacts or {}).items():
                artifact_id = str(uuid.uuid4())
                self.blobs[artifact_id] = blob
                job.artifacts.append(
                    {
                        "id": artifact_id,
                        "path": filename,
                        "filename": filename.rsplit("/", 1)[-1],
                        "file_size": len(blob),
                        "download_url": f"{self.url}/artifacts/{artifact_id}/download",
                    }
                )
            current = [j for j in build.jobs if j.retried_in is None]
            if all(j.state in FINISHED for j in current):
                failed = any(j.state != "passed" for j in current)
                build.state = "failed" if failed else "passed"
                build.finished_at = buildkite_time()
            else:
                build.state = "running"
            base = self.url + self.pipeline_path
            payload = {
                "event": "job.finished",
                "build": build.to_json(base, f"{self.url}/web"),
                "job": job.to_json(number, f"{self.url}/web"),
            }
        if deliver:
            self.deliver("job.finished", payload)
            if build.state in FINISHED:
                # Buildkite's build.finished carries the build without its jobs.
                finished = {"event": "build.finished", "build": dict(payload["build"])}
                finished["build"].pop("jobs", None)
                self.deliver("build.finished", finished)
        return payload

    def deliver(self, event: str, payload: dict[str, Any], *, timestamp: int | None = None) -> int:
        """POST a webhook (signed, or with the plain token) to ``webhook_url``; returns the
        status prbot answered."""
        if self.webhook_url is None:
            raise RuntimeError("FakeBuildkite has no webhook_url")
        body = json.dumps(payload).encode()
        stamp = int(time.time()) if timestamp is None else timestamp
        headers = {"Content-Type": "application/json", "X-Buildkite-Event": event}
        if self.webhook_mode == "token":
            headers["X-Buildkite-Token"] = self.webhook_token
        else:
            headers["X-Buildkite-Signature"] = sign(body, self.webhook_token, stamp)
        status = httpx.post(self.webhook_url, content=body, headers=headers, timeout=10).status_code
        with self.lock:
            self.deliveries.append(status)
        return status
