"""git smart HTTP for the test server: `git http-backend` run as a CGI over the bare repos."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.types import Receive, Send

# The CGI environment carries only what http-backend needs: no user config, no credentials.
_PASSTHROUGH = ("PATH", "HOME", "LANG", "TMPDIR")


def cgi_environment(
    project_root: Path,
    *,
    method: str,
    path_info: str,
    query: str,
    headers: dict[str, str],
) -> dict[str, str]:
    env = {key: os.environ[key] for key in _PASSTHROUGH if key in os.environ}
    env.update(
        {
            "GIT_PROJECT_ROOT": str(project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "PATH_INFO": path_info,
            "QUERY_STRING": query,
            "REQUEST_METHOD": method,
            "CONTENT_TYPE": headers.get("content-type", ""),
            "REMOTE_ADDR": "127.0.0.1",
            "REMOTE_USER": "x-access-token",
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
    )
    # http-backend inflates gzip bodies itself when told the encoding.
    if "content-encoding" in headers:
        env["HTTP_CONTENT_ENCODING"] = headers["content-encoding"]
    # Protocol v2 is negotiated through this header; http-backend reads it as GIT_PROTOCOL.
    if "git-protocol" in headers:
        env["HTTP_GIT_PROTOCOL"] = headers["git-protocol"]
        env["GIT_PROTOCOL"] = headers["git-protocol"]
    return env


async def serve_git(
    receive: Receive,
    send: Send,
    *,
    env: dict[str, str],
    on_status: Callable[[int], None],
    before_end: Callable[[], Awaitable[None]] | None = None,
) -> int:
    """Run http-backend, streaming the request body in and its reply out; returns the status.

    ``before_end`` runs once http-backend is done, before the reply's last byte: a client
    whose push has returned sees what the push changed (the PR's new head)."""
    proc = await asyncio.create_subprocess_exec(
        "git",
        "http-backend",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    feeding = asyncio.create_task(_feed_body(receive, proc.stdin))
    errors = asyncio.create_task(proc.stderr.read())
    status, headers = await _read_cgi_headers(proc.stdout)
    on_status(status)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    while chunk := await proc.stdout.read(65536):
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await feeding
    await errors
    await proc.wait()
    if before_end is not None:
        await before_end()
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return status


async def _feed_body(receive: Receive, stdin: asyncio.StreamWriter) -> None:
    try:
        while True:
            message: dict[str, Any] = await receive()
            if message["type"] != "http.request":
                break
            if message.get("body"):
                stdin.write(message["body"])
                await stdin.drain()
            if not message.get("more_body"):
                break
    except (BrokenPipeError, ConnectionResetError):
        pass  # http-backend stopped reading (e.g. it refused the request); its reply says why
    finally:
        stdin.close()


async def _read_cgi_headers(stdout: asyncio.StreamReader) -> tuple[int, list[tuple[bytes, bytes]]]:
    status = 200
    headers: list[tuple[bytes, bytes]] = []
    while True:
        line = (await stdout.readline()).rstrip(b"\r\n")
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"status":
            status = int(value.strip().split()[0])
        else:
            headers.append((name.strip().lower(), value.strip()))
    return status, headers
