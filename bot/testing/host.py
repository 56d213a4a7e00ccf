"""What the request handlers of the GitHub test server see of it.

``FakeGitHub`` (github_server.py) builds the handlers (server_app.py, rest_api.py,
issues_api.py, graphql.py) and hands itself in. They are typed against these protocols, not
against ``FakeGitHub``, so that no handler module imports the module that imports it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.testing.payloads import Shapes
    from bot.testing.rest_core import ApiRequest, ApiResponse, Router
    from bot.testing.state import FakeRepo, IdSource, Installation, PullRequest, Token
    from bot.testing.traffic import Traffic


class ServerState(Protocol):
    """The test server's state: repositories, tokens, ids, shapes and traffic, under one lock."""

    app_id: int
    bot_login: str
    public_key_pem: str
    root: Path
    url: str
    shapes: Shapes
    lock: threading.RLock
    installations: dict[int, Installation]
    repos: dict[str, FakeRepo]
    tokens: dict[str, Token]
    traffic: Traffic
    ids: IdSource
    seen_credentials: set[str]  # every token and JWT a client presented (for log tests)


class RouteHost(Protocol):
    """What a module adding routes needs of the REST API: its state, routes and helpers."""

    gh: ServerState
    router: Router

    def repo(self, req: ApiRequest) -> FakeRepo: ...

    def pull(self, repo: FakeRepo, number: int) -> PullRequest: ...

    def ok(
        self, body: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> ApiResponse: ...

    def page(self, req: ApiRequest, items: list[Any]) -> ApiResponse: ...
