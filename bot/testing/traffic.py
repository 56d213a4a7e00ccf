"""What reached the test server and what it should do to it: recorded calls and injected faults."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Call:
    """One request the server answered, with the status it answered."""

    method: str
    path: str
    status: int
    query: dict[str, str]


@dataclass
class Injection:
    """Delay and/or fail the next `remaining` requests matching method and path pattern."""

    method: str
    pattern: re.Pattern[str]
    delay: float
    status: int | None
    remaining: int
    after_effect: bool
    message: str | None = None  # the error body's message; the status's phrase by default
    headers: dict[str, str] | None = None  # e.g. Retry-After, X-RateLimit-Remaining: 0


class Traffic:
    """Thread-safe log of requests plus the queue of faults still to inject."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[Call] = []  # answered requests, in the order they were answered
        self.arrivals: list[tuple[str, str]] = []  # (method, path) as requests arrive
        self._injections: list[Injection] = []

    def arrive(self, method: str, path: str) -> None:
        with self._lock:
            self.arrivals.append((method, path))

    def record(self, method: str, path: str, status: int, query: dict[str, str]) -> None:
        with self._lock:
            self.calls.append(Call(method, path, status, query))

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.arrivals.clear()

    def count_calls(self, method: str | None = None, path_prefix: str | None = None) -> int:
        with self._lock:
            seen = [(c.method, c.path) for c in self.calls]
        return _count(seen, method, path_prefix)

    def count_arrivals(self, method: str | None = None, path_prefix: str | None = None) -> int:
        with self._lock:
            seen = list(self.arrivals)
        return _count(seen, method, path_prefix)

    def inject(
        self,
        method: str,
        path_regex: str,
        *,
        delay: float,
        status: int | None,
        times: int,
        after_effect: bool,
        message: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        injection = Injection(
            method.upper(),
            re.compile(path_regex),
            delay,
            status,
            times,
            after_effect,
            message,
            dict(headers) if headers else None,
        )
        with self._lock:
            self._injections.append(injection)

    def clear_injections(self) -> None:
        with self._lock:
            self._injections.clear()

    def pending_injections(self) -> list[Injection]:
        with self._lock:
            return list(self._injections)

    def take_injection(self, method: str, path: str) -> Injection | None:
        """The first pending fault for this request, used up by one."""
        with self._lock:
            for injection in self._injections:
                if injection.method in (method, "*") and injection.pattern.search(path):
                    injection.remaining -= 1
                    if injection.remaining <= 0:
                        self._injections.remove(injection)
                    return injection
        return None


def _count(seen: list[tuple[str, str]], method: str | None, path_prefix: str | None) -> int:
    return sum(
        1
        for seen_method, seen_path in seen
        if (method is None or seen_method == method.upper())
        and (path_prefix is None or seen_path.startswith(path_prefix))
    )
