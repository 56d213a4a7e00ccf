"""Evidence items: code kept apart from text, strongest first."""

from __future__ import annotations

from bot.duplicates.evidence import Evidence, evidence_rank


def test_plain_form_marks_code_with_backticks() -> None:
    item = Evidence.text("both add ", ("code", "TOKENSPEED_MLA"), " to ", ("code", "a.py"))
    assert str(item) == "both add `TOKENSPEED_MLA` to `a.py`"
    assert item.parts[1] == ("code", "TOKENSPEED_MLA")


def test_claims_rank_before_files_and_wording() -> None:
    items = [
        Evidence.text("opened 2 days apart"),
        Evidence.text("similar title and description (text 0.40)"),
        Evidence.text("3 of 4 changed files shared"),
        Evidence.text("both add ", ("code", "X_Y")),
        Evidence.text("both fix #12"),
    ]
    ordered = [str(e).split(" ")[0] for e in sorted(items, key=evidence_rank)]
    assert ordered == ["both", "both", "3", "similar", "opened"]
    assert str(sorted(items, key=evidence_rank)[0]) == "both fix #12"
