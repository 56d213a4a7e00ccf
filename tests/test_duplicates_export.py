"""Reading PR exports: problems name the line and record, and never stop the rest."""

from __future__ import annotations

import pytest

from bot.duplicates.export import ExportError, index_from_records, load_export


def test_problems_are_reported_and_good_records_kept(tmp_path) -> None:
    export = tmp_path / "prs.jsonl"
    export.write_bytes(
        b'{"number": 1, "title": "a", "state": "open"}\n'
        b"\n"
        b"not json\n"
        b'{"number": 2, "title": "b\xff", "state": "closed"}\n'
        b'{"number": 1, "title": "a again"}\n'
    )
    problems = []
    records = load_export(export, problems.append)
    assert [(r.number, r.title) for r in records] == [(2, "b\ufffd"), (1, "a again")]
    assert [str(p) for p in problems] == [
        "prs.jsonl:3: malformed JSON (Expecting value at column 1)",
        "prs.jsonl:4 (#2): not valid UTF-8; undecodable bytes replaced",
        "prs.jsonl:5 (#1): repeats an earlier record; this one is used",
    ]
    assert sorted(index_from_records(records).docs) == [1]  # the check sees open PRs only
    assert sorted(index_from_records(records, open_only=False).docs) == [1, 2]


def test_an_unreadable_export_is_one_error(tmp_path) -> None:
    with pytest.raises(ExportError, match="cannot read the PR export"):
        load_export(tmp_path)


def test_a_number_given_as_text_still_names_the_record(tmp_path) -> None:
    export = tmp_path / "prs.jsonl"
    export.write_text('{"number": "8", "title": 5, "created_at": "yesterday"}\n')
    problems = []
    records = load_export(export, problems.append)
    assert [r.number for r in records] == [8]
    assert [str(p) for p in problems] == [
        "prs.jsonl:1 (#8): title is int, not text; ignored",
        "prs.jsonl:1 (#8): created_at is not an ISO 8601 time; ignored",
    ]
