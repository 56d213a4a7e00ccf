"""Prometheus metrics, and the hook that counts every GitHub call PyGithub makes."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

REGISTRY = CollectorRegistry(auto_describe=True)

DELIVERIES = Counter(
    "prbot_deliveries_total",
    "Webhook deliveries by event and outcome",
    ["event", "outcome"],
    registry=REGISTRY,
)
JOB_LATENCY = Histogram(
    "prbot_job_latency_seconds",
    "Time from enqueue to completion",
    ["kind", "outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900),
    registry=REGISTRY,
)
GITHUB_CALLS = Counter(
    "prbot_github_calls_total",
    "GitHub REST/GraphQL calls by endpoint and status",
    ["method", "endpoint", "status"],
    registry=REGISTRY,
)

_ID = re.compile(r"/\d+(?=/|$)")
_REPO = re.compile(r"^/repos/[^/]+/[^/]+")
_SHA = re.compile(r"/[0-9a-f]{40}(?=/|$)")


def endpoint_template(path: str) -> str:
    """'/repos/o/r/issues/12/comments?page=2' -> '/repos/{repo}/issues/{n}/comments'."""
    path = path.split("?", 1)[0]
    path = _REPO.sub("/repos/{repo}", path)
    path = _SHA.sub("/{sha}", path)
    return _ID.sub("/{n}", path)


class QueueDepthCollector:
    """Queue depth and dead letters, read from the database at scrape time."""

    def __init__(self, depth: Callable[[], dict[str, int]]) -> None:
        self._depth = depth

    def collect(self):  # noqa: ANN201 - prometheus_client protocol
        depth = GaugeMetricFamily(
            "prbot_queue_jobs", "Jobs in the queue by state", labels=["state"]
        )
        dead = GaugeMetricFamily("prbot_dead_letters", "Jobs that exhausted their attempts")
        try:
            counts = self._depth()
        except Exception:  # noqa: BLE001 - a scrape must not fail because the DB blinked
            counts = {}
        for state, count in sorted(counts.items()):
            depth.add_metric([state], count)
        dead.add_metric([], counts.get("dead", 0))
        yield depth
        yield dead


class GitHubCallLogger(logging.Logger):
    """PyGithub reports every request to its injected logger at DEBUG; we count them.

    ``Requester.injectLogger`` is PyGithub's supported hook, and its DEBUG record carries
    (verb, scheme, host, url, headers, input, status, ...) as arguments.
    """

    def __init__(self) -> None:
        super().__init__("prbot.github.calls", logging.DEBUG)
        self.listeners: list[Callable[[str, str, int], None]] = []

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - logging API
        return True

    def debug(self, msg: object, *args: object, **kwargs: object) -> None:
        if len(args) >= 7 and isinstance(args[0], str) and isinstance(args[3], str):
            verb, url, status = args[0], args[3], args[6]
            code = status if isinstance(status, int) else 0
            GITHUB_CALLS.labels(verb, endpoint_template(url), str(code)).inc()
            for listener in self.listeners:
                listener(verb, url, code)


GITHUB_CALL_LOGGER = GitHubCallLogger()


def install_github_call_counter() -> None:
    from github.Requester import Requester

    Requester.injectLogger(GITHUB_CALL_LOGGER)
