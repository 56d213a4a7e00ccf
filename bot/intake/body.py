"""Reading a webhook body without trusting it: bounded in size, time and total memory.

Until its signature checks, a body is anyone's. So it is fed through the HMAC as it
arrives and kept only in a spool that moves to disk past a small size; the bytes all open
requests may hold at once are budgeted per process (over budget: 503 with Retry-After,
at once); and the whole body must arrive within a deadline (else 408).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from anyio import to_thread
from starlette.requests import Request

from bot.events.webhooks import SignatureCheck

# Real deliveries are a few KB to a few hundred; only larger ones touch the disk.
SPOOL_MEMORY_BYTES = 1024 * 1024


class BodyTooLarge(Exception):
    """The body passed the size cap (413)."""


class BodyTimeout(Exception):
    """The body did not arrive within the deadline (408)."""


class IntakeBusy(Exception):
    """Accepting this body would pass the bytes-in-flight budget (503)."""


class InflightBudget:
    """Bytes that open requests have claimed, across all connections of this process.

    Only touched from the event loop, so a plain counter needs no lock.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.claimed = 0

    def claim(self, size: int) -> None:
        if self.claimed + size > self.limit:
            raise IntakeBusy
        self.claimed += size

    def release(self, size: int) -> None:
        self.claimed = max(self.claimed - size, 0)


class NoDigest:
    """What ``read_signed_body`` feeds a body to when its proof is checked once the body is
    whole (Buildkite's token, or its signature over a timestamp and the body)."""

    def update(self, chunk: bytes) -> None:
        pass


class BodySpool:
    """Body bytes in memory up to ``SPOOL_MEMORY_BYTES``, then in a temporary file.

    File writes go through a worker thread, so a slow disk never stalls the event loop.
    """

    def __init__(self, directory: Path | None) -> None:
        self._directory = directory
        self._chunks: list[bytes] = []
        self._in_memory = 0
        self._file: tempfile._TemporaryFileWrapper | None = None  # type: ignore[type-arg]
        self.size = 0

    async def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self._file is None and self._in_memory + len(chunk) <= SPOOL_MEMORY_BYTES:
            self._chunks.append(chunk)
            self._in_memory += len(chunk)
            return
        if self._file is None:
            self._file = await to_thread.run_sync(self._open)
            pending, self._chunks, self._in_memory = b"".join(self._chunks), [], 0
            await to_thread.run_sync(self._file.write, pending)
        await to_thread.run_sync(self._file.write, chunk)

    def _open(self) -> tempfile._TemporaryFileWrapper:  # type: ignore[type-arg]
        if self._directory is not None:
            self._directory.mkdir(parents=True, exist_ok=True)
        return tempfile.NamedTemporaryFile(dir=self._directory, prefix="body-", delete=True)

    async def read(self) -> bytes:
        """The whole body; call only once its signature has been verified."""
        if self._file is None:
            return b"".join(self._chunks)
        handle = self._file

        def read_back() -> bytes:
            handle.flush()
            handle.seek(0)
            return handle.read()

        return await to_thread.run_sync(read_back)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()  # deletes it
            self._file = None
        self._chunks = []


async def read_signed_body(
    request: Request,
    check: SignatureCheck | NoDigest,
    spool: BodySpool,
    budget: InflightBudget,
    *,
    limit: int,
    timeout: float,
) -> int:
    """Stream the body through ``check`` into ``spool``; returns the bytes claimed.

    The caller releases the claim from ``budget`` when the request is done. Raises
    :class:`BodyTooLarge`, :class:`BodyTimeout` or :class:`IntakeBusy`.
    """
    declared = request.headers.get("content-length")
    expected = int(declared) if declared and declared.isdigit() and len(declared) < 19 else None
    if declared and expected is None:
        raise BodyTooLarge
    if expected is not None and expected > limit:
        raise BodyTooLarge
    # Claim what the client announced up front, so a burst of big uploads is refused before
    # any of them is read; a chunked body claims as it arrives.
    claimed = 0
    try:
        if expected:
            budget.claim(expected)
            claimed = expected
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                if not chunk:
                    continue
                if spool.size + len(chunk) > limit:
                    raise BodyTooLarge
                if spool.size + len(chunk) > claimed:
                    extra = spool.size + len(chunk) - claimed
                    budget.claim(extra)
                    claimed += extra
                check.update(chunk)
                await spool.add(chunk)
    except TimeoutError:
        budget.release(claimed)
        raise BodyTimeout from None
    except BaseException:
        budget.release(claimed)
        raise
    return claimed
