"""The fields prbot reads from a webhook payload, validated at intake (pydantic).

A signed delivery is still data prbot did not write: GitHub's shapes change, a replayed or
hand-made payload can be anything. Every field a handler or a table uses is checked here,
before the delivery is stored, so a bad one is answered 400 and recorded as ``rejected``
with its reason instead of failing later as a 500, an ``OverflowError`` in the database or a
dead job. Fields prbot does not read are ignored.

The depth and size of the JSON are bounded on the raw bytes before ``json.loads`` runs,
because the parser recurses once per nesting level.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError
from pydantic_core import from_json

# GitHub's payloads nest about 6 deep. 200 (about pydantic-core's own parser limit) is far
# below Python's recursion limit for whatever reads the payload later, and above the ~150
# brackets a pull_request payload holds in all, which lets load_json skip the shape check.
MAX_JSON_DEPTH = 200
# A large installation_repositories event lists a few thousand repositories.
MAX_JSON_CONTAINERS = 100_000
MAX_REASON_CHARS = 300

BIGINT_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1

# Ids go into BIGINT columns (installations, comment ids in effect keys); PR numbers into
# INTEGER ones. StrictInt refuses ``true`` (a bool is an int to Python, and to SQLite).
GitHubId = Annotated[StrictInt, Field(ge=1, le=BIGINT_MAX)]
PullNumber = Annotated[StrictInt, Field(ge=1, le=INT32_MAX)]
Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
FullName = Annotated[str, Field(min_length=3, max_length=300, pattern=r"^[^/\s]+/[^/\s]+$")]
Login = Annotated[str, Field(max_length=200)]
ShortText = Annotated[str, Field(max_length=500)]
# Where the worker fetches from: a web URL only (GitHub sends https; the test server http),
# never file:, ssh or git's ext:: transports.
CloneUrl = Annotated[str, Field(max_length=500, pattern=r"^https?://[^\s]+$")]


class PayloadRejected(ValueError):
    """A signed delivery prbot will not store as work; ``str()`` is the one-line reason."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Account(_Model):
    login: Login | None = None
    type: ShortText | None = None


class Installation(_Model):
    id: GitHubId
    account: Account | None = None


class Repository(_Model):
    full_name: FullName
    clone_url: CloneUrl | None = None
    html_url: ShortText | None = None
    default_branch: ShortText | None = None


class Ref(_Model):
    sha: Sha
    ref: ShortText


class PullRequest(_Model):
    number: PullNumber
    state: ShortText
    head: Ref
    base: Ref
    title: str | None = None
    body: str | None = None
    user: Account | None = None
    author_association: ShortText | None = None
    created_at: ShortText | None = None
    updated_at: ShortText | None = None


class Issue(_Model):
    number: PullNumber
    # Present (an object) only when the issue is a pull request.
    pull_request: dict[str, Any] | None = None
    user: Account | None = None


class Comment(_Model):
    id: GitHubId
    body: str | None = None
    user: Account | None = None
    performed_via_github_app: dict[str, Any] | None = None


class RepositoryRef(_Model):
    full_name: FullName


class PullRef(_Model):
    """A pull request as check_run/check_suite payloads list it (number, head and base)."""

    number: PullNumber
    head: Ref
    base: Ref


# GitHub lists every open PR whose head is the commit; a commit is rarely the head of more.
MAX_CHECK_PULLS = 100


class App(_Model):
    id: GitHubId | None = None
    slug: ShortText | None = None


class CheckRun(_Model):
    id: GitHubId
    name: ShortText
    head_sha: Sha
    status: ShortText | None = None
    conclusion: ShortText | None = None
    app: App | None = None
    pull_requests: list[PullRef] = Field(default_factory=list, max_length=MAX_CHECK_PULLS)


class CheckSuite(_Model):
    id: GitHubId
    head_sha: Sha
    head_branch: ShortText | None = None
    status: ShortText | None = None
    conclusion: ShortText | None = None
    app: App | None = None
    pull_requests: list[PullRef] = Field(default_factory=list, max_length=MAX_CHECK_PULLS)


class RequestedAction(_Model):
    # GitHub caps an action's identifier at 20 characters.
    identifier: Annotated[str, Field(max_length=20)]


class _Event(_Model):
    action: Annotated[str, Field(max_length=100)] | None = None
    installation: Installation | None = None
    sender: Account | None = None


class Label(_Model):
    name: ShortText


class PullRequestEvent(_Event):
    repository: Repository
    pull_request: PullRequest
    # Present on ``labeled`` (an approval label, bot/worker/handlers/approve.py).
    label: Label | None = None


class IssueCommentEvent(_Event):
    repository: Repository
    issue: Issue
    comment: Comment


class InstallationEvent(_Event):
    installation: Installation
    repositories: list[RepositoryRef] | None = None


class InstallationRepositoriesEvent(_Event):
    installation: Installation
    repositories_added: list[RepositoryRef] | None = None
    repositories_removed: list[RepositoryRef] | None = None
    repository_selection: ShortText | None = None
    # Strict: a string "false" must not pass for a boolean someone reads later.
    requester: dict[str, Any] | None = None
    sender_is_bot: StrictBool | None = None


class CheckRunEvent(_Event):
    repository: Repository
    check_run: CheckRun
    # Present on ``requested_action``: the button the user pressed.
    requested_action: RequestedAction | None = None


class CheckSuiteEvent(_Event):
    repository: Repository
    check_suite: CheckSuite


class WorkflowRun(_Model):
    """A GitHub Actions run (bot/worker/handlers/workflow_run.py): matched by its id, or by
    the dispatch key in its name while its dispatch waits for GitHub to name the run."""

    id: GitHubId
    name: ShortText | None = None
    display_title: Annotated[str, Field(max_length=1000)] | None = None
    event: ShortText | None = None
    path: ShortText | None = None
    head_sha: Sha | None = None
    run_number: Annotated[StrictInt, Field(ge=0, le=BIGINT_MAX)] | None = None
    html_url: ShortText | None = None
    status: ShortText | None = None
    conclusion: ShortText | None = None


class WorkflowRunEvent(_Event):
    # Required: a run's news counts only for the installation its records were made under.
    installation: Installation
    repository: Repository
    workflow_run: WorkflowRun


class StatusEvent(_Event):
    """Another app's commit status (vLLM's Buildkite posts one per job): its head's smoke
    steps are redrawn from the head's statuses as GitHub then lists them
    (bot/worker/handlers/repository_ci.py)."""

    # Required: the refresh reads the head through this installation's token.
    installation: Installation
    repository: Repository
    sha: Sha
    context: ShortText
    state: ShortText
    target_url: Annotated[str, Field(max_length=2000)] | None = None


EVENT_MODELS: dict[str, type[_Event]] = {
    "check_run": CheckRunEvent,
    "check_suite": CheckSuiteEvent,
    "pull_request": PullRequestEvent,
    "issue_comment": IssueCommentEvent,
    "installation": InstallationEvent,
    "installation_repositories": InstallationRepositoriesEvent,
    "workflow_run": WorkflowRunEvent,
    "status": StatusEvent,
}

# A JSON string, escapes included (the unrolled form runs in linear time).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPENERS = frozenset(b"[{")


def check_shape(raw: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`PayloadRejected` when the JSON in ``raw`` nests deeper than ``max_depth``
    or holds more than ``MAX_JSON_CONTAINERS`` arrays and objects.

    Works on the bytes, before any parser: strings are dropped (one C-speed regex pass),
    only brackets kept, and the bracket sequence, bounded in length first, is walked once.
    The container bound also caps what building the objects costs (millions of lists take
    the parser tens of seconds).
    """
    shape = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if len(shape) > 2 * MAX_JSON_CONTAINERS:
        raise PayloadRejected(f"JSON has over {MAX_JSON_CONTAINERS:,} arrays and objects")
    depth = 0
    for byte in shape:
        if byte in _OPENERS:
            depth += 1
            if depth > max_depth:
                raise PayloadRejected(f"JSON is nested deeper than {max_depth} levels")
        else:
            depth -= 1


def load_json(raw: bytes | str) -> dict[str, Any]:
    """The payload object from JSON text, depth-checked first; :class:`PayloadRejected` else.

    On the intake's hot path (a ``pull_request`` payload holds about 150 brackets): a
    bracket count, an upper bound of both depth and containers, skips the byte-level shape
    check when it cannot fail, and pydantic-core's Rust parser builds the object. Whatever
    that parser refuses takes the careful path, which says why (or reads what only it can).
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH:
        # Could nest too deep or hold too many containers: the precise byte-level check
        # (brackets inside strings do not count). Fewer brackets than that bound both.
        check_shape(data)
    try:
        payload = from_json(data, cache_strings=False)
    except ValueError:
        return _load_json_carefully(data)
    if not isinstance(payload, dict):
        raise PayloadRejected("payload must be a JSON object")
    return payload


def _load_json_carefully(data: bytes) -> dict[str, Any]:
    # The standard library's parser, after the byte-level shape check: its errors name the
    # problem, and it takes what the fast parser does not (lone surrogate escapes).
    check_shape(data)
    try:
        payload = json.loads(data)
    except RecursionError:  # unreachable after check_shape; kept so a parse can never 500
        raise PayloadRejected(f"JSON is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # bad JSON, bad UTF-8, an integer literal over 4,300 digits
        raise PayloadRejected(f"body is not valid JSON: {_first_line(str(exc))}") from None
    if not isinstance(payload, dict):
        raise PayloadRejected("payload must be a JSON object")
    return payload


def validate_event(event: str, payload: dict[str, Any]) -> _Event | None:
    """The typed view of a handled event's payload (None for events without a model).

    Raises :class:`PayloadRejected` naming the first field that is missing or wrong.
    """
    model = EVENT_MODELS.get(event)
    if model is None:
        return None
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise PayloadRejected(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    """'installation.id: Input should be a valid integer' (the first error; no input echoed)."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "payload"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return _first_line(f"{where}: {first['msg']}{more}")


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "invalid"
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 1] + "…"
