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
    drop: bool = False  # after the effect, cut the connection halfway through the answer


class Hold:
    """Park matching requests until the test calls ``release()``: orders a race without sleeps.

    The first ``times`` matching requests (every one when None) wait before they take effect
    (or, with ``after_effect``, after it and before the answer). ``wait_until_held`` blocks the
    test until that many have arrived. A held request gives up after ``limit`` seconds, so a
    test that forgets to release cannot hang the server.
    """

    def __init__(
        self,
        method: str,
        pattern: re.Pattern[str],
        *,
        times: int | None,
        after_effect: bool,
        limit: float,
    ) -> None:
        self.method = method
        self.pattern = pattern
        self.after_effect = after_effect
        self.limit = limit
        self._remaining = times
        self._released = threading.Event()
        self._arrived = threading.Condition()
        self.held: list[str] = []  # paths of the requests caught, in arrival order

    def matches(self, method: str, path: str) -> bool:
        return self.method in (method, "*") and bool(self.pattern.search(path))

    def catch(self, path: str) -> bool:
        """Take this request if the hold still wants one (called under the Traffic lock)."""
        if self._released.is_set() or self._remaining == 0:
            return False
        if self._remaining is not None:
            self._remaining -= 1
        with self._arrived:
            self.held.append(path)
            self._arrived.notify_all()
        return True

    def wait_released(self) -> bool:
        """Block the (server-side) caller until released; False when the limit ran out."""
        return self._released.wait(self.limit)

    def wait_until_held(self, count: int = 1, timeout: float = 60.0) -> list[str]:
        """Block until ``count`` requests are held; the held paths. TimeoutError otherwise."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.held) >= count, timeout):
                raise TimeoutError(f"{len(self.held)} of {count} requests held")
            return list(self.held)

    def release(self) -> None:
        self._released.set()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Traffic:
    """Thread-safe log of requests plus the queue of faults still to inject."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[Call] = []  # answered requests, in the order they were answered
        self.arrivals: list[tuple[str, str]] = []  # (method, path) as requests arrive
        self._injections: list[Injection] = []
        self._holds: list[Hold] = []
        self.chaos = None  # bot.testing.chaos.Chaos: random faults on a share of calls

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
        chaos = self.chaos
        return chaos.pick(method, path) if chaos is not None else None

    def hold(
        self,
        method: str,
        path_regex: str,
        *,
        times: int | None = 1,
        after_effect: bool = False,
        limit: float = 60.0,
    ) -> Hold:
        hold = Hold(
            method.upper(),
            re.compile(path_regex),
            times=times,
            after_effect=after_effect,
            limit=limit,
        )
        with self._lock:
            self._holds.append(hold)
        return hold

    def take_hold(self, method: str, path: str, *, after_effect: bool) -> Hold | None:
        """The first live hold that catches this request, if any."""
        with self._lock:
            self._holds = [h for h in self._holds if not h.released]
            for hold in self._holds:
                if hold.after_effect == after_effect and hold.matches(method, path):
                    if hold.catch(path):
                        return hold
        return None

    def release_holds(self) -> None:
        with self._lock:
            holds, self._holds = self._holds, []
        for hold in holds:
            hold.release()


def _count(seen: list[tuple[str, str]], method: str | None, path_prefix: str | None) -> int:
    return sum(
        1
        for seen_method, seen_path in seen
        if (method is None or seen_method == method.upper())
        and (path_prefix is None or seen_path.startswith(path_prefix))
    )
