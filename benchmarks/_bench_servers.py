"""The servers of the intake benchmark, each run in its own process: the bare endpoint,
the intake app alone, and the local GitHub test server the busy workers fetch from."""

from __future__ import annotations

import sys

import uvicorn


async def bare_app(scope, receive, send):  # noqa: ANN001 - raw ASGI
    """The floor: read the body, answer 202, nothing else."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    status = 200 if scope["path"] == "/healthz" else 202
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": b'{"status":"accepted"}'})


def intake_app():  # noqa: ANN201
    from bot.intake.server import create_app
    from bot.runtime.settings import Settings
    from bot.store import db

    settings = Settings.from_env()
    engine = db.make_engine(settings.database_url or db.default_database_url())
    db.migrate(engine)
    return create_app(settings, engine)


def github_server(directory: str) -> None:
    """A repository with a few PRs; writes the App key, the URL and one event per PR to
    ``directory`` and serves until killed, so workers have real fetches to do."""
    import json
    import signal
    import threading
    from pathlib import Path

    from bot.testing.github_server import FakeGitHub

    root = Path(directory)
    gh = FakeGitHub(root=root / "github").start()
    gh.add_installation(1, "acme")
    files = {f"pkg/mod{i}.py": f"VALUE_{i} = {i}\n" * 40 for i in range(40)}
    gh.create_repo("acme/widgets", installation_id=1, files=files)
    events = []
    for number in range(8):
        gh.commit("acme/widgets", f"feature{number}", {f"pkg/new{number}.py": "x = 1\n"})
        pull = gh.open_pull_request(
            "acme/widgets", head_branch=f"feature{number}", title=f"Bench {number}", body="A body"
        )
        gh.push("acme/widgets", pull["number"], {f"pkg/more{number}.py": "y = 1\n"})
        events.append(gh.pull_request_event("acme/widgets", pull["number"], "synchronize"))
    (root / "app.pem").write_text(gh.private_key_pem)
    (root / "events.json").write_text(json.dumps(events))
    (root / "github.json").write_text(json.dumps({"url": gh.url, "app_id": gh.app_id}))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    gh.stop()


if __name__ == "__main__":
    if sys.argv[1] == "github":
        github_server(sys.argv[2])
        sys.exit(0)
    kind, port = sys.argv[1], int(sys.argv[2])
    app = bare_app if kind == "bare" else intake_app()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=60,
    )
