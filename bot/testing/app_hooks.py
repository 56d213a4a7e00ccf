"""The App's own webhook as GitHub runs it: deliveries it sent (and their outcome), the
deliveries API (``GET /app/hook/deliveries``, ``POST .../attempts``), and the manifest flow
(``POST /settings/apps/new`` with a manifest, ``POST /app-manifests/{code}/conversions``).

The server sends a delivery with :meth:`HookSender.send`: signed with the App's webhook
secret, to the hook URL, recording the status code prbot answered (0 when nothing answered),
so a test can take prbot down, send a burst, and watch prbot repair what it missed.
"""

from __future__ import annotations

import json
import secrets
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from bot.testing.host import RouteHost
from bot.testing.rest_core import ApiRequest, ApiResponse, HttpError, not_found
from bot.testing.state import IdSource, now_iso

if TYPE_CHECKING:
    from bot.testing.payloads import Shapes


class AppHost(Protocol):
    """What the App's hook needs of the test server (typed here, so that this module does
    not import the one that imports it)."""

    lock: threading.RLock
    url: str
    app_id: int
    app_slug: str
    private_key_pem: str
    shapes: Shapes
    hook: HookSender


SEND_TIMEOUT = 10.0
MANIFEST_CODE_CHARS = 20


@dataclass
class HookDelivery:
    """One attempt, as GET /app/hook/deliveries lists it (the payload kept for redelivery)."""

    id: int
    guid: str
    event: str
    action: str | None
    payload: dict[str, Any]
    status_code: int = 0
    status: str = "pending"
    redelivery: bool = False
    duration: float = 0.0
    delivered_at: str = field(default_factory=now_iso)

    def listing(self) -> dict[str, Any]:
        installation = (self.payload.get("installation") or {}).get("id")
        repository = (self.payload.get("repository") or {}).get("id")
        return {
            "id": self.id,
            "guid": self.guid,
            "delivered_at": self.delivered_at,
            "redelivery": self.redelivery,
            "duration": round(self.duration, 3),
            "status": self.status,
            "status_code": self.status_code,
            "event": self.event,
            "action": self.action,
            "installation_id": installation,
            "repository_id": repository,
            "throttled_at": None,
        }


class HookSender:
    """The App's webhook: where it points, its secret, and every delivery attempt."""

    def __init__(self, gh: AppHost) -> None:
        self.gh = gh
        self.url: str | None = None
        self.secret: str | None = None
        self.deliveries: list[HookDelivery] = []  # oldest first
        self._ids = IdSource(90_000_001)
        self._client = httpx.Client(timeout=SEND_TIMEOUT)
        self._threads: list[threading.Thread] = []
        self._threads_lock = threading.Lock()
        self.manifests: dict[str, dict[str, Any]] = {}  # pending conversion code -> manifest
        self.converted: list[dict[str, Any]] = []  # manifests turned into this App

    def configure(self, url: str, secret: str) -> None:
        self.url, self.secret = url, secret

    def send(self, event: str, payload: dict[str, Any], *, guid: str | None = None) -> HookDelivery:
        """Deliver now, from the caller's thread; the attempt is recorded whatever happens."""
        with self.gh.lock:
            delivery = HookDelivery(
                id=self._ids(),
                guid=guid or str(uuid.uuid4()),
                event=event,
                action=payload.get("action"),
                payload=payload,
            )
            self.deliveries.append(delivery)
        self._post(delivery)
        return delivery

    def _post(self, delivery: HookDelivery) -> None:
        from bot.events.webhooks import signature_for

        if self.url is None or self.secret is None:
            raise RuntimeError("configure the App's hook (url, secret) before sending")
        body = json.dumps(delivery.payload).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/test",
            "X-GitHub-Event": delivery.event,
            "X-GitHub-Delivery": delivery.guid,
            "X-GitHub-Hook-ID": "1",
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-Hub-Signature-256": signature_for(body, self.secret),
        }
        started = datetime.now(UTC)
        try:
            status_code = self._client.post(self.url, content=body, headers=headers).status_code
            status = "OK" if 200 <= status_code < 300 else f"Invalid HTTP Response: {status_code}"
        except httpx.TimeoutException:
            status_code, status = 0, "timed out"
        except httpx.HTTPError:
            status_code, status = 0, "failed to connect to host"
        with self.gh.lock:
            delivery.status_code, delivery.status = status_code, status
            delivery.duration = (datetime.now(UTC) - started).total_seconds()

    def redeliver(self, original: HookDelivery) -> HookDelivery:
        """A new attempt of the same GUID, sent in the background as GitHub does."""
        delivery = HookDelivery(
            id=self._ids(),
            guid=original.guid,
            event=original.event,
            action=original.action,
            payload=original.payload,
            redelivery=True,
        )
        self.deliveries.append(delivery)
        thread = threading.Thread(target=self._post, args=(delivery,), daemon=True)
        thread.start()  # before it is listed: settle() may join it from another thread
        with self._threads_lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        return delivery

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until every background redelivery has its answer."""
        with self._threads_lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)

    def close(self) -> None:
        self.settle(5)
        self._client.close()


def register_app_hook_routes(api: RouteHost) -> None:
    add = api.router.add
    gh: AppHost = api.gh  # type: ignore[assignment] - the server is both
    hook = gh.hook

    def list_deliveries(req: ApiRequest) -> ApiResponse:
        try:
            per_page = max(1, min(int(req.query.get("per_page", 30)), 100))
            cursor = int(req.query["cursor"]) if req.query.get("cursor") else None
        except ValueError:
            raise HttpError(422, "Validation Failed") from None
        newest_first = sorted(hook.deliveries, key=lambda d: d.id, reverse=True)
        if cursor is not None:
            newest_first = [d for d in newest_first if d.id < cursor]
        chunk = newest_first[:per_page]
        headers = {}
        if len(newest_first) > per_page:
            query = urlencode({"per_page": per_page, "cursor": chunk[-1].id})
            headers["Link"] = f'<{gh.url}{req.path}?{query}>; rel="next"'
        return ApiResponse(200, [d.listing() for d in chunk], headers)

    def get_delivery(req: ApiRequest) -> ApiResponse:
        found = _delivery(req)
        body = found.listing()
        body["request"] = {"headers": {"X-GitHub-Event": found.event}, "payload": found.payload}
        body["response"] = {"headers": {}, "payload": None}
        return ApiResponse(200, body)

    def redeliver(req: ApiRequest) -> ApiResponse:
        hook.redeliver(_delivery(req))
        return ApiResponse(202, {})

    def _delivery(req: ApiRequest) -> HookDelivery:
        wanted = req.int_param("id")
        for delivery in hook.deliveries:
            if delivery.id == wanted:
                return delivery
        raise not_found()

    def new_app_from_manifest(req: ApiRequest) -> ApiResponse:
        """The browser posts the manifest form; GitHub (after the user confirms) redirects to
        the manifest's redirect_url with a one-time code."""
        form = parse_qs(req.body.decode("utf-8", "replace"))
        try:
            manifest = json.loads(form["manifest"][0])
            redirect = manifest["redirect_url"]
            manifest["hook_attributes"]["url"]  # noqa: B018 - required
            manifest["url"]  # noqa: B018 - required
        except (KeyError, IndexError, TypeError, ValueError):
            raise HttpError(422, "Invalid manifest") from None
        if urlsplit(redirect).scheme not in ("http", "https"):
            raise HttpError(422, "Invalid redirect_url")
        code = secrets.token_hex(MANIFEST_CODE_CHARS // 2)
        hook.manifests[code] = manifest
        query = {"code": code, **({"state": req.query["state"]} if "state" in req.query else {})}
        return ApiResponse(302, None, {"Location": f"{redirect}?{urlencode(query)}"})

    def convert(req: ApiRequest) -> ApiResponse:
        manifest = hook.manifests.pop(req.params["code"], None)
        if manifest is None:
            raise not_found()  # unknown, used or expired: GitHub answers 404
        secret = secrets.token_hex(20)
        hook.configure(manifest["hook_attributes"]["url"], secret)
        hook.converted.append(manifest)
        body = gh.shapes.app()
        body.update(
            {
                "name": manifest.get("name") or gh.app_slug,
                "permissions": manifest.get("default_permissions") or {},
                "events": manifest.get("default_events") or [],
                "client_id": f"Iv1.{gh.app_id:016x}",
                "client_secret": secrets.token_hex(20),
                "webhook_secret": secret,
                "pem": gh.private_key_pem,
            }
        )
        return ApiResponse(201, body)

    add("GET", "/app/hook/deliveries", list_deliveries, auth="jwt")
    add("GET", r"/app/hook/deliveries/(?P<id>\d+)", get_delivery, auth="jwt")
    add("POST", r"/app/hook/deliveries/(?P<id>\d+)/attempts", redeliver, auth="jwt")
    add("POST", "/settings/apps/new", new_app_from_manifest, auth="none")
    org_form = "/organizations/(?P<org>[^/]+)/settings/apps/new"
    add("POST", org_form, new_app_from_manifest, auth="none")
    add("POST", "/app-manifests/(?P<code>[0-9a-f]+)/conversions", convert, auth="none")
