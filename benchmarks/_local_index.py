"""A local PEP 503 package index over HTTP, so the requirements check resolves with real uv
and no internet, and uv's cache has something to be cold or warm about.

Wheels come from bot.requirements.localwheels (wheels only: prbot resolves an untrusted
author's requirements with ``--no-build``, so a source distribution would only fail). Pages
and files carry the ``Cache-Control`` PyPI sends, so a cold uv cache fetches every page and
wheel it needs, and a warm one answers without asking the index again.
"""

from __future__ import annotations

import html
import re
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bot.requirements.localwheels import write_wheel


def normalize(name: str) -> str:
    """PEP 503's normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def write_index(root: Path, packages: dict[str, dict[str, list[str]]]) -> int:
    """``{name: {version: [requires...]}}`` as wheels in ``root/files/`` and PEP 503 pages
    in ``root/simple/<name>/``. Returns the number of wheels written."""
    files_dir = root / "files"
    count = 0
    for name, versions in packages.items():
        links = []
        for version, requires in versions.items():
            path = write_wheel(files_dir, name, version, requires)
            links.append(path.name)
            count += 1
        page = root / "simple" / normalize(name) / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        anchors = "".join(
            f'<a href="../../files/{html.escape(link)}">{html.escape(link)}</a><br>\n'
            for link in links
        )
        page.write_text(f"<!DOCTYPE html>\n<html><body>\n{anchors}</body></html>\n")
    names = sorted(normalize(name) for name in packages)
    (root / "simple" / "index.html").write_text(
        "<!DOCTYPE html>\n<html><body>\n"
        + "".join(f'<a href="{name}/">{name}</a><br>\n' for name in names)
        + "</body></html>\n"
    )
    return count


class _CachingHandler(SimpleHTTPRequestHandler):
    """Static files with PyPI's caching headers: pages for 10 minutes, files for ever."""

    # Keep-alive, as PyPI's CDN: uv reuses its connections instead of opening one per GET.
    protocol_version = "HTTP/1.1"
    requests_served = 0
    _count_lock = threading.Lock()

    def end_headers(self) -> None:
        if self.path.startswith("/files/"):
            self.send_header("Cache-Control", "max-age=365000000, immutable, public")
        else:
            self.send_header("Cache-Control", "max-age=600, public")
        super().end_headers()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        with _CachingHandler._count_lock:
            type(self).requests_served += 1
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


class _BurstServer(ThreadingHTTPServer):
    # A cold uv opens dozens of connections at once from several processes; the default
    # backlog of 5 drops some, and uv reports the index as unreachable after its timeout.
    request_queue_size = 1024
    daemon_threads = True


class IndexServer:
    """Serves ``root`` on 127.0.0.1 from a thread; ``url`` is the simple index's address."""

    def __init__(self, root: Path) -> None:
        handler = type("Handler", (_CachingHandler,), {"requests_served": 0})
        self._handler = handler
        self._server = _BurstServer(("127.0.0.1", 0), partial(handler, directory=root))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/simple"

    @property
    def requests_served(self) -> int:
        return self._handler.requests_served

    def start(self) -> IndexServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
