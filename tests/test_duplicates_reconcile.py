"""Reconcile's decisions, on GitHub-shaped answers written here: no server, no database."""

from __future__ import annotations

import json

import pytest

from bot.duplicates.reconcile import (
    ReconcileError,
    StoredPR,
    plan_reconcile,
    read_files_answer,
    read_listing_page,
    rows_with_files,
)

REPO = "acme/widgets"


def _item(number: int, sha: str = "h1", updated: str = "2026-03-01T10:00:00Z", **more) -> dict:
    """A PR as the REST listing gives it (the fields reconcile reads, and a null)."""
    return {
        "number": number,
        "title": more.get("title", f"PR {number}"),
        "body": more.get("body"),  # GitHub sends null for an empty body
        "user": {"login": more.get("author", f"dev{number}")},
        "created_at": "2026-03-01T09:00:00Z",
        "updated_at": updated,
        "head": {"sha": sha, "ref": f"b{number}"},
    }


def _stored(number: int, state="open", sha="h1", updated="2026-03-01T10:00:00Z", files=True):
    return StoredPR(number, state, sha, updated, files)


def test_a_full_page_keeps_its_etag_and_what_it_listed():
    items = [_item(1), _item(2, sha="h2"), {"number": "three"}, "junk"]
    page = read_listing_page(1, 200, '"abc"', json.dumps(items), {})
    assert sorted(page.prs) == [1, 2] and page.prs[2]["head"]["sha"] == "h2"
    assert page.state == {
        "etag": '"abc"',
        "prs": [[1, "h1", "2026-03-01T10:00:00Z"], [2, "h2", "2026-03-01T10:00:00Z"]],
    }
    assert page.count == 4 and not page.not_modified  # junk still counts toward the page size


def test_a_not_modified_page_is_read_from_what_was_kept():
    kept = {"etag": '"abc"', "prs": [[1, "h1", "t"], [5, "h5", "t"]]}
    page = read_listing_page(3, 304, None, "", kept)
    assert page.prs == {1: None, 5: None} and page.state is kept
    assert page.count == 2 and page.not_modified


@pytest.mark.parametrize(
    ("status", "body", "cached", "message"),
    [
        (304, "", {}, "listing page 2: HTTP 304"),  # a 304 for a page never kept
        (502, "<html>bad gateway</html>", {}, "listing page 2: HTTP 502"),
        (200, "<html>", {}, "listing page 2: not JSON"),
        (200, '{"message": "Moved"}', {}, "listing page 2: expected a list"),
    ],
)
def test_an_unusable_listing_answer_is_an_error(status, body, cached, message):
    with pytest.raises(ReconcileError, match=message):
        read_listing_page(2, status, None, body, cached)


def test_plan_fetches_files_of_new_moved_and_unknown_prs_only():
    listed = {1: _item(1), 2: _item(2, sha="moved"), 3: _item(3), 4: None, 9: _item(9)}
    stored = {1: _stored(1), 2: _stored(2), 3: _stored(3, files=False), 4: _stored(4)}
    plan = plan_reconcile(REPO, listed, stored)
    assert plan.need_files == [2, 3, 9]
    assert plan.text_only == [] and plan.gone == []


def test_plan_refreshes_text_of_edited_and_reopened_prs():
    listed = {
        1: _item(1, updated="2026-03-02T00:00:00Z", title="New title", body="a\x00b"),
        2: _item(2),
        3: _item(3, updated="2026-02-01T00:00:00Z"),  # older than stored: left alone
    }
    stored = {1: _stored(1), 2: _stored(2, state="closed"), 3: _stored(3)}
    plan = plan_reconcile(REPO, listed, stored)
    assert [row.number for row in plan.text_only] == [1, 2]
    edited = plan.text_only[0]
    assert (edited.title, edited.body, edited.author) == ("New title", "ab", "dev1")
    assert edited.files is None and not edited.patches_known  # the stored diff is kept
    assert plan.text_only[1].state == "open"
    assert plan.need_files == []


def test_plan_closes_open_rows_the_listing_no_longer_shows():
    stored = {1: _stored(1), 2: _stored(2), 3: _stored(3, state="closed")}
    plan = plan_reconcile(REPO, {1: None}, stored)
    assert plan.gone == [2]  # 3 was closed already; 1 is still listed (from a 304)


def test_plan_tolerates_listing_items_with_odd_fields():
    odd = {"number": 1, "head": None, "user": "someone", "title": 7, "updated_at": 12}
    plan = plan_reconcile(REPO, {1: odd}, {})
    assert plan.need_files == [1]
    known = plan_reconcile(REPO, {1: odd}, {1: _stored(1, state="closed")})
    assert known.text_only[0].title == "" and known.text_only[0].author == ""


def _graphql(**nodes) -> str:
    return json.dumps({"data": {"repository": nodes}})


def test_files_answer_keeps_the_prs_it_has_and_skips_deleted_ones():
    node = {"number": 4, "files": {"nodes": []}}
    got = read_files_answer(200, _graphql(pr_4=node, pr_5=None), [4, 5])
    assert got == {4: node}


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, "", "GraphQL: HTTP 500"),
        (200, "not json", "GraphQL: not a JSON object"),
        (200, "[1, 2]", "GraphQL: not a JSON object"),
        (200, '{"data": {"repository": [1]}}', "GraphQL: repository is not an object"),
    ],
)
def test_an_unusable_files_answer_is_an_error(status, body, message):
    with pytest.raises(ReconcileError, match=message):
        read_files_answer(status, body, [1])


def test_rows_with_files_take_paths_and_counts_and_drop_what_is_not_a_file():
    node = {
        "number": 7,
        "title": "Speed up",
        "body": None,
        "createdAt": "2026-03-01T09:00:00Z",
        "headRefOid": "h7",
        "author": None,  # a deleted account ("ghost")
        "files": {
            "nodes": [
                {"path": "vllm/a.py", "additions": 3, "deletions": -1},
                {"path": None},
                "junk",
                {"path": "vllm/b.py", "additions": "many"},
            ]
        },
    }
    (row,) = rows_with_files(REPO, {7: node}, {7: _item(7, updated="2026-03-05T00:00:00Z")})
    assert (row.repo, row.number, row.state, row.head_sha) == (REPO, 7, "open", "h7")
    assert (row.title, row.body, row.author) == ("Speed up", "", "")
    assert row.updated_at == "2026-03-05T00:00:00Z" and row.created_at == "2026-03-01T09:00:00Z"
    assert [(f.path, f.additions, f.deletions) for f in row.files] == [
        ("vllm/a.py", 3, 0),
        ("vllm/b.py", 0, 0),
    ]
    assert not row.patches_known  # GraphQL gives no hunks


def test_a_pr_known_from_a_304_gets_no_updated_at_from_the_listing():
    (row,) = rows_with_files(REPO, {3: {"files": None}}, {3: None})
    assert row.updated_at == "" and row.files == []
