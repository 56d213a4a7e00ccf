"""``prbot setup``: create the GitHub App from its manifest, the way GitHub's manifest flow runs.

1. A page on 127.0.0.1 posts the manifest (bot/cli/app_manifest.py) to GitHub's "new App"
   form, with a one-time ``state``.
2. After the user confirms, GitHub redirects the browser back here with a ``code``.
3. ``POST /app-manifests/{code}/conversions`` turns it into the App's id, private key and
   webhook secret, written as ``app.pem`` and ``prbot.env`` (both 0600) in ``--out``: the
   env file is what systemd's ``EnvironmentFile=`` and compose's ``env_file:`` give ``serve``.
"""

from __future__ import annotations

import argparse
import hmac
import html
import json
import os
import re
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from bot.cli.app_manifest import (
    check_webhook_url,
    chosen_features,
    features_argument,
    manifest,
)
from bot.cli.common import CliError, progress
from bot.runtime.settings import DEFAULT_API_URL, ConfigError, load_private_key

DEFAULT_WEB_URL = "https://github.com"
CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")
# A webhook secret goes into a comma-separated env value: printable, no comma, no '#'.
SECRET = re.compile(r"[!-\"$-+\--~]{16,200}")
MAX_CONVERSION_BYTES = 256 * 1024
ENV_FILE_MAX_BYTES = 64 * 1024


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=value lines the way env files are read by systemd and compose: comments only on
    lines of their own, everything after '=' the value (so a trailing '# note' is kept; the
    ends' whitespace is kept too, which compose does and systemd trims)."""
    values: dict[str, str] = {}
    text = path.read_text()[:ENV_FILE_MAX_BYTES]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")) or "=" not in stripped:
            continue
        key, _, value = stripped.partition("=")
        values[key.strip()] = value
    return values


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` with mode 0600 from the start (never readable by others, not even
    between create and chmod); an existing file is refused."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


class ManifestFlow:
    """The local side of the flow: one state, one code, one conversion."""

    def __init__(
        self, *, app_manifest: dict[str, Any], web_url: str, api_url: str, org: str | None
    ) -> None:
        self.manifest = app_manifest
        self.web_url = web_url.rstrip("/")
        self.api_url = api_url.rstrip("/")
        self.org = org
        self.state = secrets.token_urlsafe(24)
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.done = threading.Event()

    def form_action(self) -> str:
        base = f"{self.web_url}/organizations/{self.org}" if self.org else self.web_url
        return f"{base}/settings/apps/new?state={self.state}"

    def page(self) -> str:
        action = html.escape(self.form_action(), quote=True)
        value = html.escape(json.dumps(self.manifest), quote=True)
        return (
            "<!doctype html><html><head><meta charset='utf-8'><title>prbot setup</title></head>"
            "<body><p>Create the prbot GitHub App on GitHub:</p>"
            f"<form id='create' method='post' action='{action}'>"
            f"<input type='hidden' name='manifest' value='{value}'>"
            "<button type='submit'>Create the GitHub App</button></form>"
            "</body></html>"
        )

    def callback(self, query: dict[str, list[str]]) -> tuple[int, str]:
        """Handle GitHub's redirect: (HTTP status, message for the browser)."""
        if self.done.is_set():
            return 410, "This setup already finished."
        state = (query.get("state") or [""])[0]
        code = (query.get("code") or [""])[0]
        if not hmac.compare_digest(state.encode(), self.state.encode()):
            return 400, "The state does not match this setup; start again."
        if not CODE.fullmatch(code):
            return 400, "GitHub sent no usable code."
        try:
            self.result = self.convert(code)
        except CliError as exc:
            self.error = str(exc)
            self.done.set()
            return 502, f"Could not finish: {exc}"
        self.done.set()
        return 200, f"The App {self.result.get('slug', '')} is created. You can close this page."

    def convert(self, code: str) -> dict[str, Any]:
        url = f"{self.api_url}/app-manifests/{code}/conversions"
        body = b""
        try:
            with (
                httpx.Client(timeout=30) as client,
                client.stream(
                    "POST", url, headers={"Accept": "application/vnd.github+json"}
                ) as response,
            ):
                if response.status_code != 201:
                    raise CliError(f"GitHub refused the conversion (HTTP {response.status_code})")
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_CONVERSION_BYTES:
                        raise CliError("the conversion answer is too large")
        except httpx.HTTPError as exc:
            raise CliError(f"conversion request failed: {type(exc).__name__}") from None
        try:
            data = json.loads(body)
        except ValueError:
            raise CliError("the conversion answer is not JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("id"), int):
            raise CliError("the conversion answer has no App id")
        if not isinstance(data.get("webhook_secret"), str) or not SECRET.fullmatch(
            data["webhook_secret"]
        ):
            raise CliError("the conversion answer has no usable webhook secret")
        if not isinstance(data.get("pem"), str):
            raise CliError("the conversion answer has no private key")
        try:
            load_private_key(data["pem"], "the App's private key")
        except ConfigError as exc:
            raise CliError(str(exc)) from None
        return data


def _handler(flow: ManifestFlow) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's spelling
            parts = urlsplit(self.path)
            if parts.path == "/":
                self._answer(200, flow.page(), "text/html")
            elif parts.path == "/callback":
                status, message = flow.callback(parse_qs(parts.query))
                self._answer(status, html.escape(message), "text/html")
            else:
                self._answer(404, "not found", "text/plain")

        def _answer(self, status: int, text: str, content_type: str) -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", f"{content_type}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return  # the callback URL carries the one-time code: keep it out of the output

    return Handler


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "setup", help="create the GitHub App through GitHub's manifest flow"
    )
    parser.add_argument("--webhook-url", required=True, help="https://<your host>/webhooks/github")
    parser.add_argument("--name", default="prbot", help="the App's name on GitHub")
    parser.add_argument("--org", default=None, help="create the App in this organization")
    parser.add_argument(
        "--github-url",
        default=DEFAULT_WEB_URL,
        help="GitHub's web address (GHES: https://<host>); the API is PRBOT_GITHUB_API_URL",
    )
    parser.add_argument("--out", type=Path, default=Path("prbot-app"), help="where to write")
    parser.add_argument("--port", type=int, default=0, help="local port (default: any free)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait")
    features_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_webhook_url(args.webhook_url)
    features = chosen_features(args)
    if args.org is not None and not re.fullmatch(r"[A-Za-z0-9-]{1,39}", args.org):
        raise CliError(f"--org is not an organization name: {args.org!r}")
    api_url = (os.environ.get("PRBOT_GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    out: Path = args.out
    key_path, env_path = out / "app.pem", out / "prbot.env"
    for existing in (key_path, env_path):
        if existing.exists():
            raise CliError(f"{existing} exists; move it away or choose another --out")
    try:
        server = ThreadingHTTPServer(("127.0.0.1", args.port), BaseHTTPRequestHandler)
    except OSError as exc:
        raise CliError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
    local = f"http://127.0.0.1:{server.server_address[1]}"
    flow = ManifestFlow(
        app_manifest=manifest(
            args.webhook_url,
            name=args.name,
            redirect_url=f"{local}/callback",
            features=features,
        ),
        web_url=args.github_url,
        api_url=api_url,
        org=args.org,
    )
    server.RequestHandlerClass = _handler(flow)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.daemon = True
    thread.start()
    progress(f"open {local}/ in a browser on this machine and confirm on GitHub")
    try:
        finished = flow.done.wait(args.timeout)
    finally:
        server.shutdown()
        server.server_close()
    if not finished:
        raise CliError(f"no answer from GitHub within {args.timeout:g}s; run setup again")
    if flow.error is not None or flow.result is None:
        raise CliError(flow.error or "setup did not finish")
    if not out.exists():  # a directory the user named keeps its mode; a new one is private
        out.mkdir(mode=0o700, parents=True)
    data = flow.result
    _write_private(key_path, data["pem"])
    lines = [
        f"# The GitHub App {data.get('slug', '')}, created by prbot setup.",
        f"PRBOT_APP_ID={data['id']}",
        f"PRBOT_PRIVATE_KEY_PATH={key_path.resolve()}",
        f"PRBOT_WEBHOOK_SECRET={data['webhook_secret']}",
    ]
    if api_url != DEFAULT_API_URL:
        lines.append(f"PRBOT_GITHUB_API_URL={api_url}")
    _write_private(env_path, "\n".join(lines) + "\n")
    progress(f"App {data['id']} created; wrote {key_path} and {env_path} (mode 600)")
    progress(f"next: EnvironmentFile={env_path.resolve()} (systemd) or env_file (compose)")
    print(json.dumps({"app_id": data["id"], "slug": data.get("slug"), "env_file": str(env_path)}))
    sys.stdout.flush()
    return 0
