"""What autofix would push and whether it may: the report's patches, the decision, the text."""

from __future__ import annotations

from bot.fixes.plan import (
    MAX_COMMENT_CHARS,
    Decision,
    FilePatch,
    commit_message,
    decide,
    fixes_in,
    has_fix,
    parse_kinds,
    suggestion_text,
)
from bot.gendocs.patch import unified_patch

HEAD = "a" * 40
DOC_PATCH = unified_patch("docs/x.md", "old\n", "new\n")
REQ_PATCH = unified_patch("requirements/t.txt", "a==1\n", "a==2\n")


def report(*sections):
    return {"version": 1, "head_sha": HEAD, "sections": list(sections)}


def docs_section(**finding):
    base = {"path": "docs/x.md", "patch": DOC_PATCH, "cells": [{"row": 1}], "manual_edits": []}
    return {"check": "generated_docs", "findings": [{**base, **finding}]}


def requirements_section(rerun="differs", patch=REQ_PATCH):
    item = {"path": "requirements/t.txt", "rerun": rerun, "fix_patch": patch}
    return {"check": "requirements", "findings": [{"compiled": [item]}, {"compiled": [item]}]}


def pull(**overrides):
    value = {
        "state": "open",
        "head": {"sha": HEAD, "ref": "feature", "repo": {"full_name": "acme/w"}},
        "base": {"ref": "main", "repo": {"full_name": "acme/w"}},
        "maintainer_can_modify": False,
    }
    value.update(overrides)
    return value


def test_kinds_from_the_argument():
    assert parse_kinds("") == (("docs", "requirements"), None)
    assert parse_kinds("Requirements") == (("requirements",), None)
    assert parse_kinds("requirements docs") == (("docs", "requirements"), None)
    kinds, problem = parse_kinds("docs @everyone")
    assert kinds == () and "'@everyone' is not something prbot fixes" in problem


def test_fixes_are_the_reports_patches_once_each():
    found = fixes_in(report(docs_section(), requirements_section()))
    assert found == [
        FilePatch("docs", "docs/x.md", DOC_PATCH),
        FilePatch("requirements", "requirements/t.txt", REQ_PATCH),
    ]
    assert fixes_in(report(docs_section(), requirements_section()), ["requirements"]) == found[1:]
    assert has_fix(report(docs_section()))


def test_no_fix_from_in_sync_docs_unproved_files_or_patches_of_other_paths():
    assert fixes_in(report(docs_section(cells=[]))) == []  # in sync: nothing to push
    assert fixes_in(report(docs_section(patch=""))) == []
    assert fixes_in(report(requirements_section(rerun="skipped"))) == []
    other = unified_patch(".github/workflows/ci.yml", "a\n", "b\n")
    assert fixes_in(report(docs_section(patch=other))) == []  # names another file
    both = DOC_PATCH + other
    assert fixes_in(report(docs_section(patch=both))) == []
    swapped = DOC_PATCH.replace("--- a/docs/x.md", "--- a/setup.py")
    assert fixes_in(report(docs_section(patch=swapped))) == []
    git_header = "diff --git a/docs/x.md b/docs/x.md\nnew file mode 100755\n" + DOC_PATCH
    assert fixes_in(report(docs_section(patch=git_header))) == []
    # A doc whose own added line reads like a header ("++ b/x" added is "+++ b/x").
    sneaky = unified_patch("docs/x.md", "old\n", "new\n++ b/.github/workflows/ci.yml\n")
    assert fixes_in(report(docs_section(patch=sneaky))) == []
    assert fixes_in({"sections": [{"check": "generated_docs", "findings": ["junk"]}]}) == []
    assert not has_fix({})


def test_decision_pushes_only_onto_the_head_for_write_access_where_edits_are_allowed():
    assert decide(pull(), HEAD, requester_level="write") == Decision(True)
    assert decide(pull(), HEAD, requester_level="admin").push
    moved = decide(pull(head={**pull()["head"], "sha": "b" * 40}), HEAD, requester_level="admin")
    assert not moved.push and "the head is now bbbbbbbbbbbb" in moved.reason
    assert "write access" in decide(pull(), HEAD, requester_level="triage").reason
    assert "not open" in decide(pull(state="closed"), HEAD, requester_level="admin").reason
    fork_head = {**pull()["head"], "repo": {"full_name": "alice/w"}}
    refused = decide(pull(head=fork_head), HEAD, requester_level="admin")
    assert refused.reason == "the PR does not allow edits from maintainers"
    allowed = pull(head=fork_head, maintainer_can_modify=True)
    assert decide(allowed, HEAD, requester_level="admin").push
    gone = decide(pull(head={**pull()["head"], "repo": None}), HEAD, requester_level="admin")
    assert "no longer exists" in gone.reason
    assert "dry-run" in decide(pull(), HEAD, requester_level="admin", dry_run=True).reason


def test_suggestion_keeps_the_patch_inert_and_fits_a_comment():
    hostile = unified_patch("docs/x.md", "a\n", "```\n@everyone <img src=x> #1\n")
    patches = [FilePatch("docs", "docs/x.md", hostile)]
    text = suggestion_text("bob", "the PR does not allow edits", patches)
    assert text.startswith("@bob prbot did not push the fix: the PR does not allow edits.")
    fence = "````diff"  # longer than any fence inside the patch
    assert fence in text and text.rstrip().endswith("````")
    huge = unified_patch("docs/x.md", "", "line\n" * 30_000)
    cut = suggestion_text("bob", "why", [FilePatch("docs", "docs/x.md", huge)])
    assert len(cut) <= MAX_COMMENT_CHARS and cut.count("```") % 2 == 0
    assert "patch cut to fit a comment" in cut


def test_commit_message_names_the_files_and_the_head():
    message = commit_message(
        [FilePatch("docs", "docs/x.md", DOC_PATCH), FilePatch("requirements", "r.txt", "")],
        HEAD,
        "bob",
    )
    assert message.startswith(
        "Apply prbot's fix: regenerate generated docs and compiled requirements\n"
    )
    assert HEAD in message and "- docs/x.md\n- r.txt" in message
    assert "asked by bob" in message and "@" not in message  # no mention from a commit
