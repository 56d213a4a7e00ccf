"""uvicorn with the limits an internet-facing intake needs.

uvicorn bounds keep-alive idling, concurrency and header size, but a connection that
sends nothing, or its headers a byte at a time, holds a slot for ever. The protocol below
adds a header deadline: from connect (or the end of the previous response) to the end of
the request's headers. Body deadlines are the app's (bot/intake/body.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.runtime.settings import Settings

# Largest request head (request line + headers) h11 buffers; GitHub's are about 2 KB.
MAX_HEADER_BYTES = 16 * 1024


class HeaderDeadlineProtocol(H11Protocol):
    """h11 protocol that closes a connection whose request headers do not arrive in time."""

    header_timeout: float = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._cancel_header_timer()  # the headers are in; the body has its own deadline

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next request on this connection gets the same deadline for its headers.
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def protocol_with_header_timeout(seconds: float) -> type[HeaderDeadlineProtocol]:
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout": seconds})


def uvicorn_config(
    app: Any, settings: Settings, *, host: str, port: int, **options: Any
) -> uvicorn.Config:
    """A uvicorn.Config with prbot's intake limits from ``settings``."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_with_header_timeout(settings.header_timeout),
        timeout_keep_alive=max(int(settings.keep_alive_timeout), 1),
        limit_concurrency=settings.max_connections,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        **options,
    )
