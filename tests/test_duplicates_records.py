"""Lenient parsing of PR export records."""

from __future__ import annotations

import pytest

from bot.core.snapshot import ChangedFile
from bot.duplicates.records import MAX_FILES, RecordError, record_from_dict, row_from_event


def test_records_keep_what_is_usable() -> None:
    record = record_from_dict({"number": "12", "title": "t", "body": None})
    assert record.number == 12 and record.files is None and record.body == ""
    with pytest.raises(RecordError):
        record_from_dict({"title": "no number"})
    with pytest.raises(RecordError):
        record_from_dict([1, 2])
    huge = record_from_dict(
        {
            "number": 1,
            "body": "x" * 50_000,
            "files": [{"path": f"f{i}.py"} for i in range(3_000)] + [{"nope": 1}],
        }
    )
    assert len(huge.files) == MAX_FILES
    assert any("3,001 changed files" in p for p in huge.problems)
    assert any("body has 50,000 characters" in p for p in huge.problems)
    binary = record_from_dict({"number": 2, "files": [{"path": "a.bin", "patch": "\x00\x01"}]})
    assert binary.files[0].binary and binary.files[0].patch is None


def test_github_rest_shapes_are_understood() -> None:
    record = record_from_dict({"number": 3, "user": {"login": "alice"}, "head": {"sha": "abc"}})
    assert record.author == "alice" and record.head_sha == "abc"
    assert record_from_dict({"number": 4, "head": "main"}).head_sha == ""


def _event(action: str = "synchronize", **pr) -> dict:
    return {
        "action": action,
        "repository": {"full_name": "acme/widgets"},
        "pull_request": {
            "number": 3,
            "state": "open",
            "title": "Speed up",
            "body": None,
            "user": {"login": "alice"},
            "created_at": "2026-03-01T09:00:00Z",
            "updated_at": "2026-03-01T10:00:00Z",
            "head": {"sha": "h3"},
            **pr,
        },
    }


def test_row_from_event_takes_text_state_and_the_given_diff():
    files = [ChangedFile(f"f{i}.py", additions=1, patch="@@ -1 +1 @@\n+x\n") for i in range(2)]
    row = row_from_event(_event(body="fixes\x00 #1"), files)
    assert (row.repo, row.number, row.state, row.author, row.head_sha) == (
        "acme/widgets",
        3,
        "open",
        "alice",
        "h3",
    )
    assert row.body == "fixes #1" and row.patches_known
    assert [(f.path, f.additions, f.patch is not None) for f in row.files] == [
        ("f0.py", 1, True),
        ("f1.py", 1, True),
    ]
    edited = row_from_event(_event("edited"), None)
    assert edited.files is None and not edited.patches_known and edited.body == ""
    assert row_from_event(_event("closed"), None).state == "closed"
    many = [ChangedFile(f"g{i}.py") for i in range(MAX_FILES + 5)]
    assert len(row_from_event(_event(), many).files) == MAX_FILES


@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        {"action": "opened"},
        {"pull_request": {"number": 1}, "repository": "acme/widgets"},
        {"pull_request": {"number": "1"}, "repository": {"full_name": "acme/widgets"}},
    ],
)
def test_row_from_event_is_none_for_payloads_not_about_a_pr(payload):
    assert row_from_event(payload, None) is None


def test_row_from_event_tolerates_odd_fields():
    row = row_from_event(_event(user=None, head="h", updated_at=5, created_at=7), None)
    assert (row.author, row.head_sha, row.updated_at, row.created_at) == ("", "", "", None)
