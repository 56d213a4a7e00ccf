"""Plumbing for the test server's REST API: requests, errors, routing, pagination, ETags."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from bot.testing.payloads import error_body
from bot.testing.state import Token

DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


class HttpError(Exception):
    """Answer the request with GitHub's error shape and this status."""

    def __init__(self, status: int, message: str, *, errors: list[dict] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors

    def body(self) -> dict[str, Any]:
        body = error_body(self.message, self.status)
        if self.errors:
            body["errors"] = self.errors
        return body


def not_found() -> HttpError:
    return HttpError(404, "Not Found")


def validation_failed(resource: str, field_name: str, code: str = "missing_field") -> HttpError:
    return HttpError(
        422,
        "Validation Failed",
        errors=[{"resource": resource, "code": code, "field": field_name}],
    )


@dataclass
class ApiRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes
    params: dict[str, str] = field(default_factory=dict)  # the route's named groups
    installation_id: int | None = None  # set once an installation token was accepted
    token: Token | None = None

    def json(self) -> dict[str, Any]:
        if not self.body:
            return {}
        try:
            data = json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise HttpError(400, "Problems parsing JSON") from exc
        if not isinstance(data, dict):
            raise HttpError(400, "Problems parsing JSON")
        return data

    def int_param(self, name: str) -> int:
        return int(self.params[name])


@dataclass
class ApiResponse:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        return b"" if self.body is None else json.dumps(self.body).encode()


Handler = Callable[[ApiRequest], ApiResponse]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: str  # "jwt" (the app itself), "token" (an installation) or "none" (manifest flow)


class Router:
    """Regex routes; a path that matches with another method is 404, as on GitHub."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def add(self, method: str, pattern: str, handler: Handler, *, auth: str = "token") -> None:
        self.routes.append(Route(method, re.compile(f"^{pattern}$"), handler, auth))

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            found = route.pattern.match(path)
            if found and route.method == method:
                return route, found.groupdict()
        return None


def paginate(base_url: str, req: ApiRequest, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """One page of `items` plus GitHub's `Link` header (first/prev/next/last) for the others."""
    try:
        per_page = int(req.query.get("per_page", DEFAULT_PER_PAGE))
        page = int(req.query.get("page", 1))
    except ValueError:
        per_page, page = DEFAULT_PER_PAGE, 1
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    page = max(1, page)
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page : page * per_page]

    def url(target: int) -> str:
        query = {**req.query, "per_page": str(per_page), "page": str(target)}
        return f"{base_url}{req.path}?{urlencode(query)}"

    links = []
    if page > 1:
        links += [f'<{url(page - 1)}>; rel="prev"']
    if page < last:
        links += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
    if page > 1:
        links += [f'<{url(1)}>; rel="first"']
    return chunk, ({"Link": ", ".join(links)} if links else {})


def strong_etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest() + '"'
