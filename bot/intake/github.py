"""``POST /webhooks/github``: one delivery, from headers to the stored row and the answer.

The steps, in order, each with the answer it gives when it refuses:
1. the signature header is well formed and a secret is configured (401);
2. the body streams through the HMAC into a spool, bounded in size (413), time (408) and
   bytes in flight across connections (503); a client gone mid-body gets nothing (400);
3. the signature over the whole body matches one configured secret (401);
4. the event and delivery headers are there (400); ``ping`` is answered, events prbot does
   not handle are dropped unstored (200);
5. the delivery is validated and stored by the writer thread (202, or 400 stored as
   ``rejected``, 503 when the database is down).
Nothing from the headers is trusted, or becomes a metric label, before step 3.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import ClientDisconnect

from bot.events.webhooks import (
    HANDLED_ACTIONS,
    SignatureCheck,
    WebhookError,
    check_signature_header,
    delivery_headers,
)
from bot.intake.body import (
    BodySpool,
    BodyTimeout,
    BodyTooLarge,
    InflightBudget,
    IntakeBusy,
    read_signed_body,
)
from bot.intake.writer import DeliveryWriter
from bot.runtime.metrics import count_delivery
from bot.runtime.settings import Settings

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
# On answers sent before the body was read in full: uvicorn would otherwise keep the
# connection and read (and discard) the rest of an upload nobody wants.
CLOSE = {"Connection": "close"}
# A refused body up to this size is cheaper to read and drop than a new connection.
DRAIN_BYTES = 64 * 1024


# The route reads the raw body (the signature is over its bytes), so FastAPI cannot infer
# what it takes; this says it, for clients and for the fuzz run over /openapi.json.
GITHUB_WEBHOOK_OPENAPI: dict[str, Any] = {
    "parameters": [
        {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
        for name in ("X-Hub-Signature-256", "X-GitHub-Event", "X-GitHub-Delivery")
    ],
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string"},
                        "installation": {
                            "type": "object",
                            "properties": {"id": {"type": "integer"}},
                        },
                        "repository": {
                            "type": "object",
                            "properties": {"full_name": {"type": "string"}},
                        },
                    },
                }
            }
        },
    },
    "responses": {
        "202": {"description": "stored and queued"},
        "200": {"description": "ping, a duplicate, or an event prbot does not handle"},
        "400": {"description": "signed, but a payload prbot cannot use (stored as rejected)"},
        "401": {"description": "missing or wrong signature"},
        "413": {"description": "body over PRBOT's limit"},
        "503": {"description": "busy or storage unavailable; retry later"},
    },
}


def _close_unless_small(request: Request) -> dict[str, str]:
    declared = request.headers.get("content-length", "")
    return {} if declared.isdigit() and int(declared) <= DRAIN_BYTES else CLOSE


def _answer(
    status: int,
    event: str | None,
    outcome: str,
    *,
    verified: bool,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    count_delivery(event, outcome, verified=verified)
    return JSONResponse({"status": outcome, **extra}, status_code=status, headers=headers)


class GitHubIntake:
    """The GitHub webhook route's whole work, with the parts it shares across requests: the
    writer thread, the in-flight budget and the spool directory."""

    def __init__(
        self,
        settings: Settings,
        writer: DeliveryWriter,
        budget: InflightBudget,
        spool_dir: Path,
    ) -> None:
        self.settings = settings
        self.writer = writer
        self.budget = budget
        self.spool_dir = spool_dir

    async def receive(self, request: Request) -> Response:
        try:
            signature = check_signature_header(request.headers.get("x-hub-signature-256"))
            check = SignatureCheck(self.settings.webhook_secrets)
        except WebhookError as exc:
            outcome = "bad_signature" if exc.status == 401 else "error"
            return _answer(
                exc.status,
                None,
                outcome,
                verified=False,
                headers=_close_unless_small(request),
                message=str(exc),
            )
        read = await self._read_verified(request, check, signature)
        if isinstance(read, Response):
            return read
        headers, event, body = read
        return await self._store(headers, event, body)

    async def _read_verified(
        self, request: Request, check: SignatureCheck, signature: str
    ) -> Response | tuple[dict[str, str], str, bytes]:
        """Steps 2-4: the body, read and verified, with its headers and event; or the answer."""
        settings = self.settings
        spool = BodySpool(self.spool_dir)
        claimed = 0
        try:
            try:
                claimed = await read_signed_body(
                    request,
                    check,
                    spool,
                    self.budget,
                    limit=settings.max_body_bytes,
                    timeout=settings.body_timeout,
                )
            except BodyTooLarge:
                limit_mib = settings.max_body_bytes // (1024 * 1024)
                return _answer(
                    413,
                    None,
                    "too_large",
                    verified=False,
                    headers=CLOSE,
                    message=f"body exceeds {limit_mib} MiB",
                )
            except IntakeBusy:
                return _answer(
                    503,
                    None,
                    "busy",
                    verified=False,
                    headers={"Retry-After": str(RETRY_AFTER_SECONDS), **CLOSE},
                    message="too many request bytes in flight; retry later",
                )
            except ClientDisconnect:
                # Gone before the body was in; nobody reads the answer.
                count_delivery(None, "disconnected", verified=False)
                return Response(status_code=400)
            except BodyTimeout:
                return _answer(
                    408,
                    None,
                    "timeout",
                    verified=False,
                    headers=CLOSE,
                    message=f"body not received within {settings.body_timeout:g}s",
                )
            try:
                check.verify(signature)
            except WebhookError as exc:
                return _answer(401, None, "bad_signature", verified=False, message=str(exc))
            headers = {k.lower(): v for k, v in request.headers.items()}
            try:
                event, _guid = delivery_headers(headers)
            except WebhookError as exc:
                return _answer(exc.status, None, "malformed", verified=True, message=str(exc))
            if event == "ping":
                return _answer(200, event, "pong", verified=True)
            if event not in HANDLED_ACTIONS:
                return _answer(200, event, "ignored", verified=True)
            return headers, event, await spool.read()
        finally:
            spool.close()
            self.budget.release(claimed)

    async def _store(self, headers: dict[str, str], event: str, body: bytes) -> Response:
        """Step 5: validated and stored on the writer thread, answered with what it did."""
        try:
            stored = await self.writer.store(headers, body)
        except WebhookError as exc:  # 415: a content type GitHub never sends
            return _answer(exc.status, event, "malformed", verified=True, message=str(exc))
        except SQLAlchemyError as exc:
            log.error("could not store delivery: %s", exc)
            return _answer(
                503,
                event,
                "error",
                verified=True,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
                message="storage unavailable; redeliver later",
            )
        extra = {"message": stored.message} if stored.message else {}
        return _answer(stored.status, event, stored.outcome, verified=True, **extra)
