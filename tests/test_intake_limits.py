"""A real `prbot serve` process under slow, partial and unsigned load (issue 8, items 1-2).

All load goes to 127.0.0.1 and is bounded in count and time: a few hundred sockets, a
few seconds of header deadline, at most 40 uploads.
"""

from __future__ import annotations

import socket
import threading
import uuid

import httpx
from intake_helpers import ServeProcess

MIB = 1024 * 1024


def _healthz(url: str) -> int:
    # The timeout is a hang guard, not a measurement: on main this request never returned.
    return httpx.get(f"{url}/healthz", timeout=20).status_code


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed the connection (EOF or reset)."""
    try:
        while sock.recv(4096):
            pass  # an answer (e.g. a 400) before the close is fine
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_healthz_answers_during_slowloris_and_idle_connections_are_dropped(tmp_path):
    with ServeProcess(
        tmp_path,
        "--no-worker",
        "--dry-run",
        PRBOT_INTAKE_HEADER_TIMEOUT="1",
        PRBOT_INTAKE_MAX_CONNECTIONS="400",
    ) as serve:
        silent = [_connect(serve.port) for _ in range(150)]
        # Headers a little at a time, never finished.
        partial = [_connect(serve.port) for _ in range(150)]
        for sock in partial:
            sock.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ")
        try:
            for _ in range(5):
                assert _healthz(serve.url) == 200
                for sock in partial[:20]:
                    try:
                        sock.sendall(b"a")
                    except OSError:
                        pass  # already dropped by the header deadline
            # The header deadline drops every one of them (on main they were held for ever).
            for sock in silent + partial:
                sock.settimeout(30)
                assert _closed_by_server(sock)
            assert _healthz(serve.url) == 200
        finally:
            for sock in silent + partial:
                sock.close()


def _partial_upload(port: int, size: int, statuses: list[str]) -> socket.socket | None:
    """Announce ``size`` bytes, send all but the last one, unsigned-but-well-formed."""
    sock = _connect(port)
    head = (
        "POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nX-GitHub-Event: pull_request\r\n"
        f"X-GitHub-Delivery: {uuid.uuid4()}\r\nX-Hub-Signature-256: sha256={'0' * 64}\r\n"
        f"Content-Length: {size}\r\n\r\n"
    ).encode()
    chunk = b"x" * MIB
    try:
        sock.sendall(head)
        sent = 0
        while sent < size - 1:
            piece = chunk[: min(len(chunk), size - 1 - sent)]
            sock.sendall(piece)
            sent += len(piece)
        statuses.append("held")
        return sock
    except OSError:
        # Refused before the body was read: read the answer the server sent.
        try:
            sock.settimeout(5)
            statuses.append(sock.recv(200).decode("latin-1").split("\r\n")[0] or "closed")
        except OSError:
            statuses.append("closed")
        sock.close()
        return None


def test_memory_stays_bounded_under_40_partial_24_mib_uploads(tmp_path):
    with ServeProcess(
        tmp_path, "--no-worker", "--dry-run", PRBOT_INTAKE_BODY_TIMEOUT="60"
    ) as serve:
        assert _healthz(serve.url) == 200
        baseline = serve.rss_kib()
        statuses: list[str] = []
        held: list[socket.socket] = []
        lock = threading.Lock()

        def upload() -> None:
            sock = _partial_upload(serve.port, 24 * MIB, statuses)
            if sock is not None:
                with lock:
                    held.append(sock)

        threads = [threading.Thread(target=upload) for _ in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        try:
            peak = serve.rss_kib()
            assert _healthz(serve.url) == 200
            # Main went from 101 MB to 1.19 GB here. The spool keeps at most 1 MiB of each
            # body in memory, and the in-flight budget (100 MiB) refuses the rest at once.
            growth_mib = (peak - baseline) / 1024
            assert growth_mib < 120, (growth_mib, statuses)
            assert len(statuses) == 40
            # Refused (503, connection closed mid-upload) rather than read: all but a few.
            assert len(held) <= 5 and statuses.count("held") == len(held), statuses
            # A refused upload is told when to come back.
            with socket.create_connection(("127.0.0.1", serve.port), timeout=30) as sock:
                sock.sendall(
                    b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 25000000\r\n"
                    b"X-Hub-Signature-256: sha256=" + b"0" * 64 + b"\r\n\r\n"
                )
                answer = sock.recv(1000).decode("latin-1").lower()
            assert answer.startswith("http/1.1 503") and "retry-after: 5" in answer
        finally:
            for sock in held:
                sock.close()


def _read_response(sock: socket.socket, pending: bytes = b"") -> tuple[int, bytes]:
    """(status, leftover bytes) of one HTTP/1.1 response with a Content-Length."""
    while b"\r\n\r\n" not in pending:
        data = sock.recv(65536)
        assert data, "connection closed"
        pending += data
    head, _, rest = pending.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(head.split(b" ")[1]), rest[length:]


def test_unsigned_posts_with_random_event_names_add_no_metric_series(tmp_path):
    with ServeProcess(tmp_path, "--no-worker", "--dry-run") as serve:

        def unsigned(count: int) -> None:
            # Pipelined on one keep-alive connection (a writer thread, answers read here):
            # the server works back to back and the client stays cheap.
            requests = [
                b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nX-GitHub-Event: "
                + (uuid.uuid4().hex * 250).encode()  # 8,000 characters
                + b"\r\nContent-Length: 2\r\n\r\n{}"
                for _ in range(count)
            ]
            with _connect(serve.port) as sock:
                writer = threading.Thread(target=sock.sendall, args=(b"".join(requests),))
                writer.start()
                pending = b""
                for _ in range(count):
                    status, pending = _read_response(sock, pending)
                    assert status == 401
                writer.join()

        unsigned(1)  # the one "unverified" series now exists
        before = httpx.get(f"{serve.url}/metrics", timeout=20).text
        unsigned(2000)
        after = httpx.get(f"{serve.url}/metrics", timeout=20).text
        counter = 'prbot_deliveries_total{event="unverified",outcome="bad_signature"}'
        assert f"{counter} 1.0" in before and f"{counter} 2001.0" in after
        # The same series, and the same size but for the counter's three new digits
        # (on main: 20,000 such requests made a 323 MB scrape).
        assert len(after) == len(before) + len("2001.0") - len("1.0")
        series = [line.rsplit(" ", 1)[0] for line in after.splitlines()]
        assert series == [line.rsplit(" ", 1)[0] for line in before.splitlines()]
