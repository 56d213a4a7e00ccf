"""PR records as the audit sees them: the PR export contract, parsed leniently.

Every field but ``number`` may be missing; the audit uses whatever is there. Problems with
one record are reported as :class:`RecordProblem` lines and never stop the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# Past these sizes a record is trimmed (and says so) rather than slowing every query down.
MAX_BODY_CHARS = 20_000
MAX_TITLE_CHARS = 500
MAX_FILES = 1_000
MAX_PATCH_CHARS = 200_000


class RecordError(ValueError):
    """A record that cannot be used at all (e.g. no integer ``number``)."""


@dataclass(frozen=True)
class RecordProblem:
    """One clear line about one record: where it came from and what was wrong."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class FileChange:
    """One changed file: GitHub's ``{path, additions, deletions, patch}``."""

    path: str
    additions: int = 0
    deletions: int = 0
    patch: str | None = None
    binary: bool = False


@dataclass
class PRRecord:
    """One pull request. ``files`` is None when the source said nothing about files."""

    number: int
    title: str = ""
    body: str = ""
    author: str = ""
    created_at: datetime | None = None
    state: str = "open"
    head_sha: str = ""
    files: list[FileChange] | None = None
    commits: list[str] = field(default_factory=list)
    # A closed PR's outcome, when the export says (``merged`` / ``merged_at``, ``closed_at``).
    merged: bool = False
    closed_at: datetime | None = None
    # Set by the parser when the record had to be trimmed or repaired.
    problems: list[str] = field(default_factory=list)


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 (GitHub's ``2024-05-01T12:00:00Z``) to an aware datetime; None if unusable."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _text(value: Any, limit: int, name: str, problems: list[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{name} is {type(value).__name__}, not text; ignored")
        return ""
    if "\x00" in value:
        value = value.replace("\x00", "")
        problems.append(f"{name} contains NUL characters; removed")
    if len(value) > limit:
        problems.append(f"{name} has {len(value):,} characters; only the first {limit:,} used")
        value = value[:limit]
    return value


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _files(value: Any, problems: list[str]) -> list[FileChange] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        problems.append(f"files is {type(value).__name__}, not a list; ignored")
        return None
    if len(value) > MAX_FILES:
        problems.append(
            f"{len(value):,} changed files; only the first {MAX_FILES:,} used for code signals"
        )
        value = value[:MAX_FILES]
    files: list[FileChange] = []
    skipped = 0
    for item in value:
        if isinstance(item, str):
            item = {"path": item}
        if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
            skipped += 1
            continue
        patch = item.get("patch")
        binary = bool(item.get("binary"))
        if not isinstance(patch, str):
            patch = None
        elif "\x00" in patch:
            patch, binary = None, True
        elif len(patch) > MAX_PATCH_CHARS:
            problems.append(f"patch of {item['path']} is too large; its hunks are ignored")
            patch = None
        files.append(
            FileChange(
                path=item["path"].strip("/"),
                additions=_count(item.get("additions")),
                deletions=_count(item.get("deletions")),
                patch=patch,
                binary=binary,
            )
        )
    if skipped:
        problems.append(f"{skipped} file entries without a path ignored")
    return files


def record_from_dict(data: Any) -> PRRecord:
    """A record from one decoded export object; raises RecordError if it has no number."""
    if not isinstance(data, dict):
        raise RecordError(f"expected a JSON object, got {type(data).__name__}")
    number = data.get("number")
    if isinstance(number, str) and number.strip().isdigit():
        number = int(number.strip())
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        raise RecordError("missing or invalid 'number' (a positive integer is required)")
    problems: list[str] = []
    # The contract's flat fields first; GitHub's REST shapes (user.login, head.sha) as fallback.
    author = data.get("author") or data.get("user")
    if isinstance(author, dict):
        author = author.get("login")
    head = data.get("head")
    head_sha = data.get("head_sha") or (head.get("sha") if isinstance(head, dict) else None)
    commits = data.get("commits")
    title = _text(data.get("title"), MAX_TITLE_CHARS, "title", problems)
    body = _text(data.get("body"), MAX_BODY_CHARS, "body", problems)
    created_at = parse_time(data.get("created_at"))
    if created_at is None and data.get("created_at") not in (None, ""):
        problems.append("created_at is not an ISO 8601 time; ignored")
    state = data.get("state") if isinstance(data.get("state"), str) else "open"
    merged = data.get("merged") is True or bool(data.get("merged_at")) or state == "merged"
    return PRRecord(
        number=number,
        title=title,
        body=body,
        author=author if isinstance(author, str) else "",
        created_at=created_at,
        state=state,
        head_sha=head_sha if isinstance(head_sha, str) else "",
        files=_files(data.get("files"), problems),
        commits=[c for c in commits if isinstance(c, str)] if isinstance(commits, list) else [],
        merged=merged,
        closed_at=parse_time(data.get("closed_at")),
        problems=problems,
    )


OPEN, CLOSED = "open", "closed"


@dataclass
class PRRow:
    """One PR as the open-PR index stores it (bot/store/open_prs.py writes it).

    ``files`` None means the write says nothing about the diff: the stored code features are
    kept when the head is unchanged.
    """

    repo: str
    number: int
    state: str
    title: str
    body: str
    author: str
    created_at: str | None
    updated_at: str
    head_sha: str
    files: list[FileChange] | None
    patches_known: bool
    # For a closed PR: whether it was merged, and when it closed (GitHub's ``closed_at``).
    merged: bool = False
    closed_at: str | None = None


def _clip(value: Any, limit: int) -> str:
    return value[:limit].replace("\x00", "") if isinstance(value, str) else ""


def _member(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def file_changes(files: list[Any]) -> list[FileChange]:
    """The index's view of a diff (``ChangedFile`` or ``FileChange`` items), bounded."""
    return [
        FileChange(
            path=f.path,
            additions=getattr(f, "additions", 0),
            deletions=getattr(f, "deletions", 0),
            patch=getattr(f, "patch", None),
            binary=getattr(f, "binary", False),
        )
        for f in files[:MAX_FILES]
    ]


def row_from_event(payload: Any, files: list[Any] | None) -> PRRow | None:
    """The index row one ``pull_request`` webhook payload says; None if it is not about a PR.

    ``files`` is the diff the worker computed (``ChangedFile`` or ``FileChange`` items) for
    opened/synchronize/reopened, or None for edited/closed: then only text and state change.
    """
    if not isinstance(payload, dict):
        return None
    pr = payload.get("pull_request")
    repo = _member(payload, "repository").get("full_name")
    if (
        not isinstance(pr, dict)
        or not isinstance(repo, str)
        or not isinstance(pr.get("number"), int)
    ):
        return None
    state = OPEN if pr.get("state", OPEN) == OPEN and payload.get("action") != "closed" else CLOSED
    changes = file_changes(files) if files is not None else None
    return PRRow(
        repo=repo,
        number=pr["number"],
        state=state,
        title=_clip(pr.get("title"), MAX_TITLE_CHARS),
        body=_clip(pr.get("body"), MAX_BODY_CHARS),
        author=_clip(_member(pr, "user").get("login"), 200),
        created_at=pr.get("created_at") if isinstance(pr.get("created_at"), str) else None,
        updated_at=_clip(pr.get("updated_at"), 40),
        head_sha=_clip(_member(pr, "head").get("sha"), 64),
        files=changes,
        patches_known=changes is not None,
        merged=state == CLOSED and (pr.get("merged") is True or bool(pr.get("merged_at"))),
        closed_at=_clip(pr.get("closed_at"), 40) or None if state == CLOSED else None,
    )
