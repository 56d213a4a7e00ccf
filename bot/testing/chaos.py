"""Random GitHub faults for reliability tests: a share of REST calls fails as GitHub fails.

``FakeGitHub.chaos(rate=0.2, seed=1)`` makes each REST request (git transport excluded:
prbot's fetch has its own retry story) fail with probability ``rate``, drawing one of
:data:`FAULTS`: a 5xx before the effect, a 5xx *after* the effect (the reply lost, the
comment created), a secondary rate limit (403) or a 429, both with ``Retry-After``, or a
reply slower than the client waits, or a connection dropped halfway through the answer.
Seeded, so a failing run can be replayed.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

from bot.testing.traffic import Injection

_ANY = re.compile("")
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)


def _fault(status: int | None, *, after: bool = False, delay: float = 0.0, **headers: str):
    return Injection(
        "*",
        _ANY,
        delay,
        status,
        1,
        after,
        SECONDARY if status == 403 else None,
        {k.replace("_", "-"): v for k, v in headers.items()} or None,
    )


FAULTS: dict[str, Injection] = {
    "500": _fault(500),
    "502": _fault(502),
    "503": _fault(503),
    "502_after_effect": _fault(502, after=True),
    "403_secondary": _fault(403, Retry_After="1"),
    "429": _fault(429, Retry_After="1"),
    "dropped_after_effect": Injection("*", _ANY, 0.0, None, 1, True, None, None, drop=True),
}
# Not in the default draw: a reply later than the client waits (``slow_seconds``).
SLOW = "slow"


@dataclass
class Chaos:
    rate: float
    seed: int
    kinds: tuple[str, ...] = tuple(FAULTS)
    slow_seconds: float = 0.0  # with "slow" among kinds: how late the slow answers come
    injected: Counter = field(default_factory=Counter)
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, method, path)
    _random: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def pick(self, method: str, path: str) -> Injection | None:
        if path.endswith(".git") or ".git/" in path:
            return None
        with self._lock:
            if self._random.random() >= self.rate:
                return None
            kind = self._random.choice(self.kinds)
            self.injected[kind] += 1
            self.calls.append((kind, method, path))
        if kind == SLOW:
            return _fault(None, after=True, delay=self.slow_seconds)
        return FAULTS[kind]
