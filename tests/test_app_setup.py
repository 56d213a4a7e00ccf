"""`prbot setup` through GitHub's manifest flow, against the local GitHub test server, as a
user runs it: the real executable, a browser's form post, GitHub's redirect back."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from bot.cli.setup import read_env_file
from bot.github.app import GitHubApp
from bot.runtime.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


class _Form(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form":
            self.action = attributes["action"]
        elif tag == "input":
            self.fields[attributes["name"]] = attributes["value"]


def _start_setup(gh, out: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PRBOT_GITHUB_API_URL": gh.url}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot",
            "setup",
            "--webhook-url",
            "https://bot.example/webhooks/github",
        ]
        + ["--github-url", gh.url, "--out", str(out), "--timeout", "60", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    line = process.stderr.readline()
    found = re.search(r"open (http://127\.0\.0\.1:\d+)/", line)
    assert found, line
    return process, found.group(1)


def _browser_form(local: str) -> _Form:
    page = httpx.get(f"{local}/", timeout=10)
    assert page.status_code == 200
    form = _Form()
    form.feed(page.text)
    return form


def test_setup_creates_the_app_and_writes_what_serve_reads(github_server, tmp_path):
    out = tmp_path / "app"
    process, local = _start_setup(github_server, out)
    try:
        form = _browser_form(local)
        assert form.action.startswith(f"{github_server.url}/settings/apps/new?state=")
        # A forged redirect (another state) is refused and the flow keeps waiting.
        forged = httpx.get(f"{local}/callback?code=abc&state=forged", timeout=10)
        assert forged.status_code == 400
        # The browser posts the manifest; GitHub redirects back to the local callback.
        done = httpx.post(form.action, data=form.fields, follow_redirects=True, timeout=30)
        assert done.status_code == 200 and "is created" in done.text
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    key, env_file = out / "app.pem", out / "prbot.env"
    for written in (key, env_file):
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    values = read_env_file(env_file)
    assert values["PRBOT_APP_ID"] == str(github_server.app_id)
    assert values["PRBOT_WEBHOOK_SECRET"] == github_server.hook.secret
    assert key.read_text() == github_server.private_key_pem
    # The manifest GitHub got: the hook URL given, a redirect to the local page.
    (manifest,) = github_server.hook.converted
    assert manifest["hook_attributes"]["url"] == "https://bot.example/webhooks/github"
    assert manifest["redirect_url"] == f"{local}/callback"
    # What serve reads works: the App authenticates against GitHub with it.
    settings = Settings(
        webhook_secrets=(values["PRBOT_WEBHOOK_SECRET"],),
        app_id=values["PRBOT_APP_ID"],
        private_key_path=Path(values["PRBOT_PRIVATE_KEY_PATH"]),
        github_api_url=values["PRBOT_GITHUB_API_URL"],
        github_request_interval=0,
        github_write_interval=0,
    )
    settings.check_startup(github=True)
    assert GitHubApp(settings).bot_login() == github_server.bot_login
    # An unknown (or spent) code is refused by GitHub.
    spent = httpx.post(f"{github_server.url}/app-manifests/{'0' * 20}/conversions")
    assert spent.status_code == 404


def test_a_code_github_does_not_know_is_one_line_and_writes_nothing(github_server, tmp_path):
    out = tmp_path / "app"
    process, local = _start_setup(github_server, out, "--org", "acme")
    try:
        form = _browser_form(local)
        assert "/organizations/acme/settings/apps/new?state=" in form.action
        state = form.action.split("state=")[1]
        answer = httpx.get(f"{local}/callback?code={'1' * 20}&state={state}", timeout=30)
        assert answer.status_code == 502
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 2
    assert stderr.strip().splitlines()[-1] == (
        "prbot: error: GitHub refused the conversion (HTTP 404)"
    )
    assert not out.exists()


def test_setup_refuses_to_overwrite(tmp_path, capsys):
    from bot.cli import main

    out = tmp_path / "app"
    out.mkdir()
    (out / "app.pem").write_text("old key")
    assert main(["setup", "--webhook-url", "https://x.example/h", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert (out / "app.pem").read_text() == "old key"


@pytest.mark.parametrize("url", ["ftp://x/h", "not a url", "https:///nohost"])
def test_a_bad_webhook_url_is_one_line(url, capsys):
    from bot.cli import main

    assert main(["app-manifest", "--webhook-url", url]) == 2
    assert capsys.readouterr().err.startswith("prbot: error: --webhook-url")


def _flow(api="https://api.example"):
    from bot.cli.setup import ManifestFlow

    return ManifestFlow(app_manifest={}, web_url="https://gh.example", api_url=api, org=None)


GOOD_SECRET = "a" * 40


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (httpx.Response(201, content=b"not json"), "not JSON"),
        (httpx.Response(201, json=[1]), "no App id"),
        (httpx.Response(201, json={"id": 1, "webhook_secret": "a,b#c" * 8}), "webhook secret"),
        (httpx.Response(201, json={"id": 1, "webhook_secret": GOOD_SECRET}), "no private key"),
        (
            httpx.Response(201, json={"id": 1, "webhook_secret": GOOD_SECRET, "pem": "x"}),
            "not a PEM private key",
        ),
        (httpx.Response(201, content=b" " * (300 * 1024)), "too large"),
        (httpx.ConnectError("refused"), "conversion request failed: ConnectError"),
    ],
)
def test_an_answer_setup_cannot_use_is_refused(answer, message):
    import respx

    from bot.cli.common import CliError

    flow = _flow()
    with respx.mock:
        route = respx.post("https://api.example/app-manifests/abc/conversions")
        if isinstance(answer, Exception):
            route.side_effect = answer
        else:
            route.return_value = answer
        with pytest.raises(CliError, match=message):
            flow.convert("abc")


def test_callbacks_are_checked_before_any_conversion():
    flow = _flow()
    assert flow.callback({"state": ["wrong"], "code": ["abc"]})[0] == 400
    assert flow.callback({"state": [flow.state], "code": ["bad code!"]})[0] == 400
    assert flow.callback({"state": [flow.state]})[0] == 400
    flow.done.set()
    assert flow.callback({"state": [flow.state], "code": ["abc"]})[0] == 410


def test_the_local_page_escapes_the_manifest():
    from bot.cli.setup import ManifestFlow

    flow = ManifestFlow(
        app_manifest={"name": "x'><script>alert(1)</script>"},
        web_url="https://gh.example",
        api_url="https://api.example",
        org="acme",
    )
    page = flow.page()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "https://gh.example/organizations/acme/settings/apps/new?state=" in page


def test_bad_org_and_busy_port_are_one_line(capsys):
    import socket

    from bot.cli import main

    assert main(["setup", "--webhook-url", "https://x.example/h", "--org", "no/pe"]) == 2
    assert "--org" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["setup", "--webhook-url", "https://x.example/h", "--port", str(port)]
        assert main([*args, "--out", "/nonexistent-dir-prbot"]) == 2
    assert "cannot listen" in capsys.readouterr().err


def test_env_files_are_read_as_systemd_reads_them(tmp_path):
    env = tmp_path / "e.env"
    env.write_text("# c\n; c\n\nA=1\nB = x  # kept\nnot a line\nC=\n")
    assert read_env_file(env) == {"A": "1", "B": " x  # kept", "C": ""}
