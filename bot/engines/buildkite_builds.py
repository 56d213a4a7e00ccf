"""Buildkite's builds, read: the read-only half of its REST API, for what prbot did not build.

prbot reads the repository's own builds of a head (before dispatching, and to report the
smoke steps' states in advisory mode) and a base branch's history (failure classification).
Both are ``GET …/pipelines/{pipeline}/builds`` with filters (``commit``, ``branch``,
``include_retried_jobs``), newest first, in pages of at most 100 that the ``Link`` header
chains (RFC 8288). Every walk is bounded: pages, bytes per page, builds in all; a list longer
than the bound comes back cut, saying so. A token with ``read_builds`` is enough.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from bot.core.redact import redact_secrets
from bot.engines.base import BuildList, EngineError

DEFAULT_API_URL = "https://api.buildkite.com"
PER_PAGE = 100  # Buildkite's largest page
# A build of vLLM's pipeline carries a few hundred jobs: a page of 100 is a few MB.
MAX_PAGE_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_PAGES = 3
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def next_link(header: str | None) -> str | None:
    """The ``rel="next"`` URL of a Link header, if any."""
    if not header:
        return None
    for part in header.split(","):
        found = _NEXT.search(part)
        if found:
            return found.group(1)
    return None


def pipeline_settings(settings: Any) -> dict[str, str] | None:
    """The pipeline ``PRBOT_BUILDKITE_*`` names, as keyword arguments for the write engine and
    for this reader alike, or None while any of organization, pipeline and token is unset."""
    ci = settings.ci
    if not (ci.buildkite_organization and ci.buildkite_pipeline and ci.buildkite_token):
        return None
    return {
        "organization": ci.buildkite_organization,
        "pipeline": ci.buildkite_pipeline,
        "token": ci.buildkite_token,
        "api_url": ci.buildkite_api_url,
    }


class BuildkiteBuilds:
    """``GET`` on one pipeline's builds; never creates or changes anything."""

    def __init__(
        self,
        *,
        organization: str,
        pipeline: str,
        token: str,
        api_url: str = DEFAULT_API_URL,
        client: httpx.Client | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.builds_url = (
            f"{api_url.rstrip('/')}/v2/organizations/{organization}/pipelines/{pipeline}/builds"
        )
        self._client = client or httpx.Client(timeout=timeout)
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.calls = 0
        redact_secrets(token)

    @classmethod
    def from_settings(cls, settings: Any) -> BuildkiteBuilds | None:
        """The pipeline ``PRBOT_BUILDKITE_*`` names, or None while it is not configured."""
        named = pipeline_settings(settings)
        return None if named is None else cls(**named)

    def _same_endpoint(self, url: str) -> bool:
        # A next link goes on listing the same builds; anything else is not followed (the
        # token would go with it).
        mine, theirs = urlsplit(self.builds_url), urlsplit(url)
        return (mine.scheme, mine.netloc, mine.path) == (theirs.scheme, theirs.netloc, theirs.path)

    def _get(self, url: str, params: Mapping[str, str] | None) -> tuple[Any, str | None]:
        """One bounded GET: the JSON it answered and its next link; EngineError otherwise."""
        self.calls += 1
        try:
            with self._client.stream("GET", url, params=params, headers=self._headers) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_PAGE_BYTES:
                        raise EngineError(
                            f"Buildkite's build list page is over {MAX_PAGE_BYTES} bytes"
                        )
                status, link = response.status_code, response.headers.get("link")
        except httpx.HTTPError as exc:
            raise EngineError(
                f"Buildkite could not be reached: {exc.__class__.__name__}", transient=True
            ) from None
        if status >= 400:
            message = None
            try:
                data = json.loads(body)
                message = data.get("message") if isinstance(data, dict) else None
            except ValueError:
                pass
            raise EngineError(
                f"Buildkite answered {status}: {str(message or 'no message')[:200]}",
                transient=status >= 500 or status == 429,
            )
        try:
            return json.loads(body), next_link(link)
        except ValueError:
            raise EngineError("Buildkite's answer is not JSON") from None
        except RecursionError:
            raise EngineError("Buildkite's answer is nested too deeply to read") from None

    def _page(self, url: str, params: Mapping[str, str] | None) -> tuple[list, str | None]:
        data, link = self._get(url, params)
        if not isinstance(data, list):
            raise EngineError("Buildkite's build list is not a list")
        return [build for build in data if isinstance(build, dict)], link

    def build(self, number: int, *, retried_jobs: bool = True) -> dict[str, Any]:
        """One build with its jobs, every attempt included (``include_retried_jobs``)."""
        params = {"include_retried_jobs": "true"} if retried_jobs else None
        data, _ = self._get(f"{self.builds_url}/{int(number)}", params)
        if not isinstance(data, dict):
            raise EngineError("Buildkite's build is not an object")
        return data

    def list_builds(
        self,
        filters: Mapping[str, str],
        *,
        max_pages: int = DEFAULT_MAX_PAGES,
        partial: bool = False,
    ) -> BuildList:
        """Builds matching Buildkite's ``filters`` (``commit``, ``branch``,
        ``include_retried_jobs``…), newest first, at most ``max_pages`` pages of 100.
        EngineError (one line) when the API refuses or answers with something else; with
        ``partial``, the pages read before the failure come back with ``stopped`` saying it."""
        params: dict[str, str] | None = {**filters, "per_page": str(PER_PAGE)}
        url: str | None = self.builds_url
        builds: list[dict[str, Any]] = []
        pages = 0
        while url is not None and pages < max_pages:
            try:
                page, url = self._page(url, params)
            except EngineError as exc:
                if not partial:
                    raise
                return BuildList(tuple(builds), True, pages, f"page {pages + 1}: {exc}")
            params = None  # the next link carries every parameter
            pages += 1
            builds.extend(page)
            if url is not None and not self._same_endpoint(url):
                elsewhere = "Buildkite's next-page link points elsewhere; not followed"
                if not partial:
                    raise EngineError(elsewhere)
                return BuildList(tuple(builds), True, pages, f"page {pages + 1}: {elsewhere}")
        return BuildList(tuple(builds), url is not None, pages)

    def builds_for_commit(self, commit: str, *, max_pages: int = DEFAULT_MAX_PAGES) -> BuildList:
        """Every build of that commit (a full SHA: Buildkite matches no short one)."""
        return self.list_builds({"commit": commit}, max_pages=max_pages)

    def builds_for_branch(
        self,
        branch: str,
        *,
        max_pages: int = DEFAULT_MAX_PAGES,
        retried_jobs: bool = True,
        partial: bool = False,
    ) -> BuildList:
        """A branch's recent builds, retried jobs included (a flaky step passes on retry)."""
        filters = {"branch": branch}
        if retried_jobs:
            filters["include_retried_jobs"] = "true"
        return self.list_builds(filters, max_pages=max_pages, partial=partial)
