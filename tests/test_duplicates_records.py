"""Lenient parsing of PR export records."""

from __future__ import annotations

import pytest

from bot.duplicates.records import MAX_FILES, RecordError, record_from_dict


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
