"""Prometheus metrics, and the hook that counts every GitHub call PyGithub makes."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

# The intake's own metrics (this process).
REGISTRY = CollectorRegistry(auto_describe=True)
# What workers measure. In worker threads of this process it is read directly; worker
# processes write it to files (prometheus_client's multiprocess mode, switched on by
# MULTIPROCESS_ENV in their environment) that the intake reads at scrape time.
WORKER_REGISTRY = CollectorRegistry(auto_describe=True)
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
_worker_metrics_dir: Path | None = None

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
    registry=WORKER_REGISTRY,
)
GITHUB_CALLS = Counter(
    "prbot_github_calls_total",
    "GitHub REST/GraphQL calls by endpoint and status",
    ["method", "endpoint", "status"],
    registry=WORKER_REGISTRY,
)
GITHUB_RETRIES = Counter(
    "prbot_github_retries_total",
    "GitHub requests PyGithub sent again, by endpoint and why (a status or the error kind)",
    ["method", "endpoint", "reason"],
    registry=WORKER_REGISTRY,
)


def count_github_retry(method: str | None, url: str | None, status: int | None, error) -> None:  # noqa: ANN001
    """One retry of a GitHub call; the reason is the status, or the error's kind."""
    if status is not None and 100 <= status < 600:
        reason = str(status)
    elif error is not None:
        name = type(error).__name__
        reason = "timeout" if "Timeout" in name else "connection" if "Connect" in name else "error"
    else:
        reason = "error"
    verb = method if method in HTTP_METHODS else "OTHER"
    GITHUB_RETRIES.labels(verb, endpoint_template(url or "/"), reason).inc()


REPAIR = Counter(
    "prbot_repair_total",
    "Missed-delivery repair: redelivered GUIDs, redeliveries GitHub refused, stale heads queued",
    ["outcome"],
    registry=WORKER_REGISTRY,
)
REPAIR_OUTCOMES = ("redelivered", "refused", "stale_queued", "sweeps_given_up", "not_modified")


def count_repair(result) -> None:  # noqa: ANN001 - bot.repair.redeliver.RepairResult
    REPAIR.labels("redelivered").inc(len(result.redelivered))
    REPAIR.labels("refused").inc(result.redeliver_failures)
    # "stale_queued": open heads without a current report queued again (none or an older one).
    REPAIR.labels("stale_queued").inc(len(result.sweep.queued))
    REPAIR.labels("sweeps_given_up").inc(len(result.sweep.gave_up))
    REPAIR.labels("not_modified").inc(1 if result.not_modified else 0)


def read_worker_processes(directory: Path | None) -> None:
    """Export worker metrics from the files worker processes write in ``directory``
    (None: from this process's worker threads)."""
    global _worker_metrics_dir
    _worker_metrics_dir = directory


def exposition() -> tuple[bytes, str]:
    """The /metrics body and its content type: the intake's metrics, then the workers'."""
    if _worker_metrics_dir is not None:
        from prometheus_client.multiprocess import MultiProcessCollector

        workers = CollectorRegistry()
        MultiProcessCollector(workers, path=str(_worker_metrics_dir))
    else:
        workers = WORKER_REGISTRY
    return generate_latest(REGISTRY) + generate_latest(workers), CONTENT_TYPE_LATEST


# Labels are a closed set: a label value from outside it (an unsigned header, a user name, a
# branch in a URL) would let anyone grow the registry, and every scrape, without bound.
KNOWN_EVENTS = frozenset(
    {
        "pull_request",
        "issue_comment",
        "installation",
        "installation_repositories",
        "ping",
        "check_run",
        "check_suite",
        "push",
        "pull_request_review",
        "pull_request_review_comment",
        "issues",
        "status",
        "workflow_run",
    }
)
OTHER_EVENT = "other"
# The event label of a request whose signature was not (yet) checked: its headers are anyone's.
UNVERIFIED_EVENT = "unverified"
DELIVERY_OUTCOMES = frozenset(
    {
        "accepted",
        "duplicate",
        "ignored",
        "pong",
        "rejected",
        "bad_signature",
        "malformed",
        "too_large",
        "busy",
        "timeout",
        "disconnected",
        "error",
    }
)


def event_label(event: str | None, *, verified: bool) -> str:
    """The ``event`` label for a delivery: a known event name, ``other`` or ``unverified``."""
    if not verified:
        return UNVERIFIED_EVENT
    return event if event in KNOWN_EVENTS else OTHER_EVENT


def count_delivery(event: str | None, outcome: str, *, verified: bool) -> None:
    DELIVERIES.labels(
        event_label(event, verified=verified),
        outcome if outcome in DELIVERY_OUTCOMES else "error",
    ).inc()


# Path words of the REST API prbot calls; any other segment (a login, a branch, a file path)
# becomes ``{x}``, so no value a user chose becomes a label.
KNOWN_PATH_SEGMENTS = frozenset(
    {
        "access_tokens",
        "app",
        "app-manifests",
        "attempts",
        "conversions",
        "deliveries",
        "hook",
        "branches",
        "check-runs",
        "check-suites",
        "collaborators",
        "comments",
        "commits",
        "compare",
        "contents",
        "events",
        "files",
        "git",
        "graphql",
        "heads",
        "hooks",
        "installation",
        "installations",
        "issues",
        "labels",
        "members",
        "orgs",
        "permission",
        "pulls",
        "rate_limit",
        "reactions",
        "refs",
        "repos",
        "repositories",
        "reviews",
        "search",
        "status",
        "statuses",
        "timeline",
        "user",
        "users",
    }
)
MAX_PATH_SEGMENTS = 8
HTTP_METHODS = frozenset({"GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"})
_SHA = re.compile(r"[0-9a-f]{40}")


def endpoint_template(path: str) -> str:
    """'/repos/o/r/issues/12/comments?page=2' -> '/repos/{repo}/issues/{n}/comments'.

    A bounded set of values: known path words, ``{repo}``, ``{n}``, ``{sha}``, else ``{x}``.
    """
    path = urlsplit(path).path if "://" in path else path.split("?", 1)[0]
    parts = [part for part in path.split("/") if part]
    if parts[:2] == ["api", "v3"]:  # GitHub Enterprise Server's prefix
        parts = parts[2:]
    template: list[str] = []
    index = 0
    while index < len(parts) and len(template) < MAX_PATH_SEGMENTS:
        part = parts[index]
        if part == "repos" and index + 1 < len(parts):
            template += ["repos", "{repo}"]
            index += 3
            continue
        if part.isdigit():
            template.append("{n}")
        elif _SHA.fullmatch(part):
            template.append("{sha}")
        elif part in KNOWN_PATH_SEGMENTS:
            template.append(part)
        else:
            template.append("{x}")
        index += 1
    if index < len(parts):
        template.append("…")
    return "/" + "/".join(template)


class QueueDepthCollector:
    """Queue depth and dead letters, read from the database at scrape time."""

    def __init__(
        self, depth: Callable[[], dict[str, int]], inbox: Callable[[], int] | None = None
    ) -> None:
        self._depth = depth
        self._inbox = inbox

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
        if self._inbox is not None:
            # SQLite: acknowledged deliveries not yet moved into the database
            # (bot/store/inbox.py). Near 0; a climb means the move is failing.
            inbox = GaugeMetricFamily(
                "prbot_intake_inbox_deliveries", "Deliveries waiting in the intake's inbox"
            )
            try:
                inbox.add_metric([], self._inbox())
            except Exception:  # noqa: BLE001 - as above
                inbox.add_metric([], 0)
            yield inbox


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
            GITHUB_CALLS.labels(
                verb if verb in HTTP_METHODS else "OTHER",
                endpoint_template(url),
                str(code) if 0 <= code < 600 else "0",
            ).inc()
            for listener in self.listeners:
                listener(verb, url, code)


GITHUB_CALL_LOGGER = GitHubCallLogger()


def install_github_call_counter() -> None:
    from github.Requester import Requester

    Requester.injectLogger(GITHUB_CALL_LOGGER)
