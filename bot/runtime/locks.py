"""A lock per pull request across workers and replicas, around read-check-publish.

Postgres replicas share an advisory lock; SQLite deployments are one machine, where a file
lock in the data directory orders the workers.
"""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text


def _key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@contextmanager
def named_lock(engine: Engine, name: str, lock_dir: Path) -> Iterator[None]:
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _key(name)})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _key(name)})
                conn.commit()
        return
    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.lock"
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
