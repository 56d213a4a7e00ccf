"""The test server's ASGI application: records calls, applies faults, checks credentials, and
hands each request to git http-backend or to the REST routes."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from bot.testing.auth import (
    AuthError,
    basic_password,
    bearer_value,
    rate_limit_status,
    verify_app_jwt,
)
from bot.testing.git_http import cgi_environment, serve_git
from bot.testing.host import ServerState
from bot.testing.payloads import error_body
from bot.testing.rest_api import RestApi
from bot.testing.rest_core import ApiRequest, ApiResponse, HttpError, strong_etag
from bot.testing.state import Token
from bot.testing.traffic import Hold, Injection

log = logging.getLogger(__name__)

GIT_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+?\.git)(?P<rest>/.*)$")
_JSON = "application/json; charset=utf-8"


class ServerApp:
    """One ASGI callable; the REST handlers run in a thread under the server's state lock."""

    def __init__(self, gh: ServerState) -> None:
        self.gh = gh
        self.api = RestApi(gh)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    def release_delays(self) -> None:
        """Cut every injected delay short (called from another thread when the server stops)."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)

    async def _delay(self, seconds: float) -> None:
        if self._stopping is None:
            self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    async def _hold(self, hold: Hold | None) -> None:
        """Park this request until the test releases the hold (a thread waits, not the loop)."""
        if hold is not None and not await asyncio.to_thread(hold.wait_released):
            log.warning("a held request was never released; let go after %.0fs", hold.limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method: str = scope["method"]
        path: str = scope["path"]
        raw_query = scope["query_string"].decode("latin-1")
        query = dict(parse_qsl(raw_query, keep_blank_values=True))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        self.gh.traffic.arrive(method, path)
        await self._hold(self.gh.traffic.take_hold(method, path, after_effect=False))
        injection = self.gh.traffic.take_injection(method, path)
        if injection and not injection.after_effect:
            if injection.delay:
                await self._delay(injection.delay)
            if injection.status:
                # Recorded before answering, so a client that has its answer sees the call.
                self.gh.traffic.record(method, path, injection.status, query)
                await _send(send, _injected_failure(injection))
                return

        git = GIT_PATH.match(path)
        if git and self.gh.git_storage(git["owner"], git["repo"][:-4]) is not None:

            def record(status: int) -> None:
                self.gh.traffic.record(method, path, status, query)

            await self._serve_git(receive, send, method, path, raw_query, headers, record)
            return

        body = await _read_body(receive)
        request = ApiRequest(method, path, query, headers, body)
        response = await run_in_threadpool(self.dispatch, request)
        await self._hold(self.gh.traffic.take_hold(method, path, after_effect=True))
        if injection and injection.after_effect:
            # The effect has happened; now the reply is slow or lost, as after a crash.
            if injection.delay:
                await self._delay(injection.delay)
            if injection.status:
                response = _injected_failure(injection)
            if injection.drop:
                self.gh.traffic.record(method, path, 0, query)
                await _send_half(send, response)
                return
        self.gh.traffic.record(method, path, response.status, query)
        await _send(send, response)

    async def _serve_git(
        self,
        receive: Receive,
        send: Send,
        method: str,
        path: str,
        raw_query: str,
        headers: dict[str, str],
        record: Callable[[int], None],
    ) -> None:
        password = basic_password(headers.get("authorization"))
        if password:
            self.gh.seen_credentials.add(password)
        token = self.gh.tokens.get(password or "")
        git = GIT_PATH.match(path)
        assert git is not None
        storage = self.gh.git_storage(git["owner"], git["repo"][:-4])
        if token is None or not _live(token) or storage is None:
            record(401)
            response = ApiResponse(401, None, {"WWW-Authenticate": 'Basic realm="GitHub"'})
            await _send(send, response)
            return
        repo, fork_owner = storage
        if repo.installation_id != token.installation_id:
            record(404)
            await _send(send, ApiResponse(404, error_body("Repository not found.", 404)))
            return
        pushing = git["rest"].startswith("/git-receive-pack") or query_service(raw_query)
        if pushing and fork_owner is not None and not self.gh.fork_allows_push(repo, fork_owner):
            # A fork's branch takes an App's push only while its PR allows maintainer edits.
            record(403)
            await _send(send, ApiResponse(403, error_body("Permission denied.", 403)))
            return
        # A fork's commits live in the upstream's storage (see open_pull_request).
        path_info = f"/{repo.full_name}.git{git['rest']}"
        env = cgi_environment(
            self.gh.root, method=method, path_info=path_info, query=raw_query, headers=headers
        )

        async def after_push() -> None:
            await run_in_threadpool(self.gh.after_push, repo.full_name)

        done = after_push if pushing and method == "POST" else None
        await serve_git(receive, send, env=env, on_status=record, before_end=done)

    def dispatch(self, req: ApiRequest) -> ApiResponse:
        """Route, authenticate and answer one REST request (GitHub's error shapes on failure)."""
        with self.gh.lock:
            try:
                response = self._answer(req)
            except HttpError as exc:
                response = ApiResponse(exc.status, exc.body())
            except Exception:  # a bug in the test server must show up as a 500, not a hang
                log.exception("test server failed on %s %s", req.method, req.path)
                response = ApiResponse(500, error_body("Server Error", 500))
            if req.token is not None:
                req.token.used += 1
            response.headers.update(_rate_limit_headers(req))
            if req.method == "GET" and response.status == 200:
                etag = strong_etag(response.encoded())
                response.headers["ETag"] = etag
                if req.headers.get("if-none-match") == etag:
                    # Conditional hits are free on GitHub: give the request back to the budget.
                    if req.token is not None:
                        req.token.used -= 1
                    return ApiResponse(304, None, {"ETag": etag})
            return response

    def _answer(self, req: ApiRequest) -> ApiResponse:
        matched = self.api.router.match(req.method, req.path)
        if matched is None:
            raise HttpError(404, "Not Found")
        route, req.params = matched
        self._authenticate(req, route.auth)
        return route.handler(req)

    def _authenticate(self, req: ApiRequest, kind: str) -> None:
        if kind == "none":  # the manifest flow: the browser form and the one-time code
            return
        credential = bearer_value(req.headers.get("authorization"))
        if credential is None:
            raise HttpError(401, "Requires authentication")
        self.gh.seen_credentials.add(credential)
        if kind == "jwt":
            try:
                verify_app_jwt(credential, self.gh.public_key_pem, self.gh.app_id)
            except AuthError as exc:
                raise HttpError(401, str(exc)) from exc
            return
        token = self.gh.tokens.get(credential)
        if token is None or not _live(token):
            raise HttpError(401, "Bad credentials")
        req.token = token
        req.installation_id = token.installation_id


def query_service(raw_query: str) -> bool:
    """Whether an info/refs request is the start of a push (``service=git-receive-pack``)."""
    return "service=git-receive-pack" in raw_query


def _live(token: Token) -> bool:
    return token.expires_at > datetime.now(UTC)


def _rate_limit_headers(req: ApiRequest) -> dict[str, str]:
    status = rate_limit_status(req.token)
    return {
        "X-RateLimit-Limit": str(status["limit"]),
        "X-RateLimit-Remaining": str(status["remaining"]),
        "X-RateLimit-Reset": str(status["reset"]),
        "X-RateLimit-Used": str(status["used"]),
        "X-RateLimit-Resource": "graphql" if req.path == "/graphql" else "core",
    }


def _injected_failure(injection: Injection) -> ApiResponse:
    status = injection.status or 500
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    body = error_body(injection.message or phrase, status)
    return ApiResponse(status, body, dict(injection.headers or {}))


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message: dict[str, Any] = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _send(send: Send, response: ApiResponse) -> None:
    body = response.encoded()
    headers = [(k.lower().encode(), v.encode()) for k, v in response.headers.items()]
    if response.body is not None:
        headers.append((b"content-type", _JSON.encode()))
    if response.status not in (204, 304):
        headers.append((b"content-length", str(len(body)).encode()))
    else:
        body = b""
    headers.append((b"x-github-media-type", b"github.v3; format=json"))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_half(send: Send, response: ApiResponse) -> None:
    """The headers and half the body, then nothing: uvicorn closes the connection when the
    app returns with the answer incomplete, as a dropped connection looks to the client."""
    body = response.encoded() or b"{}"
    headers = [(b"content-type", _JSON.encode()), (b"content-length", str(len(body)).encode())]
    # A 204 or 304 carries no body to cut short; announce one, as a broken proxy might.
    status = 200 if response.status in (204, 304) else response.status
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
