"""The parts of GitHub's pull-request object prbot keeps, small enough for a job row."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_time(value: str | None) -> datetime:
    """GitHub's ``2026-01-02T03:04:05Z``; now when absent."""
    if not value:
        return datetime.now(UTC)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def pull_summary(pull: dict[str, Any]) -> dict[str, Any]:
    """The fields of a pull-request object the pipeline needs."""
    return {
        "number": pull["number"],
        "title": pull.get("title") or "",
        "body": pull.get("body") or "",
        "author": (pull.get("user") or {}).get("login", ""),
        "author_association": pull.get("author_association") or "NONE",
        "head_sha": pull["head"]["sha"],
        "base_sha": pull["base"]["sha"],
        "base_ref": pull["base"]["ref"],
        "created_at": pull.get("created_at"),
        "updated_at": pull.get("updated_at"),
        "state": pull.get("state", "open"),
    }
