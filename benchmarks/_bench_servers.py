"""The two servers the intake benchmark compares, each run in its own process."""

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
    from bot.config import Settings
    from bot.server import create_app
    from bot.store import db

    settings = Settings.from_env()
    engine = db.make_engine(settings.database_url or db.default_database_url())
    db.migrate(engine)
    return create_app(settings, engine)


if __name__ == "__main__":
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
