"""The open-PR index in the database: events, incremental sync, reconcile against the local
GitHub test server (ETag listing, batched GraphQL, call counts)."""

from __future__ import annotations

from bot.duplicates.features import build_features
from bot.duplicates.scoring import ScoringConfig
from bot.duplicates.store import (
    DatabaseIndex,
    apply_pull_request_event,
    open_pr_count,
)
from bot.snapshot import ChangedFile

REPO = "acme/engine"
INSTALLATION = 7
NO_PACING = {"seconds_between_requests": None, "seconds_between_writes": None, "retry": None}
PATCH = '@@ -58,3 +58,4 @@\n ctx\n+    TOKENSPEED_MLA = "x.TokenSpeedBackend"\n'
REGISTRY = "vllm/v1/attention/backends/registry.py"


def _payload(number: int, action: str, *, title: str, updated: str, sha: str = "s", **pr) -> dict:
    return {
        "action": action,
        "number": number,
        "repository": {"full_name": REPO},
        "pull_request": {
            "number": number,
            "state": "closed" if action == "closed" else "open",
            "title": title,
            "body": pr.get("body", ""),
            "user": {"login": pr.get("author", f"dev{number}")},
            "created_at": "2026-03-01T10:00:00Z",
            "updated_at": updated,
            "head": {"sha": sha},
        },
    }


def _query(engine, title: str, files=None):
    features = build_features(999, title=title, author="me", files=files)
    return DatabaseIndex(engine, REPO).query(features, ScoringConfig(min_score=0.05))


def test_events_update_the_index_incrementally(engine) -> None:
    files = [ChangedFile(REGISTRY, additions=1, patch=PATCH)]
    apply_pull_request_event(
        engine, _payload(1, "opened", title="Add TokenSpeed backend", updated="1"), files
    )
    apply_pull_request_event(
        engine, _payload(2, "opened", title="Refactor tokenizer pool", updated="1"), []
    )
    assert open_pr_count(engine, REPO) == 2
    result = _query(engine, "TokenSpeed MLA backend", [ChangedFile(REGISTRY, patch=PATCH)])
    assert result.candidates[0].number == 1
    assert any("TOKENSPEED_MLA" in str(e) for e in result.candidates[0].evidence)

    # edited: new text, the diff is kept
    apply_pull_request_event(
        engine, _payload(1, "edited", title="Speed up MLA decode", updated="2"), None
    )
    result = _query(engine, "x", [ChangedFile(REGISTRY, patch=PATCH)])
    assert result.candidates[0].number == 1
    assert result.candidates[0].title == "Speed up MLA decode"

    # an older delivery arriving late changes nothing
    apply_pull_request_event(engine, _payload(1, "edited", title="stale", updated="1"), None)
    assert _query(engine, "x", [ChangedFile(REGISTRY, patch=PATCH)]).candidates[0].title != "stale"

    apply_pull_request_event(engine, _payload(1, "closed", title="t", updated="3"), None)
    assert open_pr_count(engine, REPO) == 1
    assert 1 not in [c.number for c in _query(engine, "TokenSpeed backend").candidates]
    apply_pull_request_event(engine, _payload(1, "reopened", title="TokenSpeed", updated="4"), None)
    assert [c.number for c in _query(engine, "TokenSpeed").candidates][:1] == [1]


def test_payloads_that_are_not_prs_change_nothing(engine) -> None:
    apply_pull_request_event(engine, {"action": "opened"}, None)
    apply_pull_request_event(engine, {"pull_request": {"number": "x"}, "repository": {}}, None)
    assert open_pr_count(engine, REPO) == 0
    assert len(DatabaseIndex(engine, REPO)) == 0
