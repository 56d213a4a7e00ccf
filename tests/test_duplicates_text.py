"""Text features: tokens, template boilerplate, claimed issues, stacked series."""

from __future__ import annotations

from bot.duplicates.text import claimed_issues, clean_body, mentioned_numbers, tokens


def test_tokens_split_identifiers_and_stem() -> None:
    words = tokens("Fix crashes in FlashAttention when block_size is 32")
    assert {"crash", "flashattent", "flash", "attent", "block_siz", "block"} <= set(words)
    assert "in" not in words and "32" not in words
    # spellings people vary: acronyms, MoE, hyphenated compounds
    assert "sdpa" in tokens("scaled_dot_product_attention")
    assert "moe" in tokens("MoE") and "moe" in tokens("moe")
    assert "allreduc" in tokens("all-reduce") and "allreduc" in tokens("allreduce")


def test_stacked_series_are_recognised() -> None:
    from bot.duplicates.text import stacked_on

    assert stacked_on("Stacked on #12. Follow-up to #13, depends on org/r#14") == {12, 13, 14}
    assert stacked_on("Duplicate of #15") == set()


def test_claims_are_stronger_than_mentions() -> None:
    body = "Fixes #12, closes org/repo#13 and resolves https://github.com/o/r/issues/14. See #15."
    assert claimed_issues(body) == {12, 13, 14}
    assert mentioned_numbers(body) == {12, 13, 14, 15}
    assert claimed_issues("<!-- Fixes #99 in the template -->") == set()


def test_template_boilerplate_is_dropped() -> None:
    body = (
        "<!-- comment -->\nDESCRIBE THE CHANGE BELOW AND TICK EVERY ITEM OF THE CHECKLIST.\n"
        "## Purpose\nreal words\n- [ ] tick me\n```python\ncode()\n```\n"
        "**BEFORE SUBMITTING, PLEASE READ <https://x.example>** (text below is removed)\n"
    )
    cleaned = clean_body(body)
    assert "real words" in cleaned
    assert "DESCRIBE" not in cleaned and "tick me" not in cleaned and "code()" not in cleaned
    assert "SUBMITTING" not in cleaned and "removed" not in cleaned


def test_reverts_and_backports_are_related_not_duplicates() -> None:
    from bot.duplicates.text import is_revert, stacked_on

    assert stacked_on("Reverts vllm-project/vllm#1124") == {1124}
    assert stacked_on("Backport of #7 to the release branch; cherry-picked #8") == {7, 8}
    assert is_revert('Revert "[Core] Enable chunked prefill"') and not is_revert("Fix revert")


def test_a_revert_names_what_it_reverts() -> None:
    from bot.duplicates.text import is_revert

    for title in ("Revert #1234", "revert PR 1234", "[Revert] Enable x", "Reverts 1a2b3c4d"):
        assert is_revert(title), title
    # A fix that goes back to an older behaviour is not a revert of another PR.
    assert not is_revert("Revert to fp32 accumulation in the fused MoE kernel")
    assert not is_revert("Reverting the sampler change")


def test_claim_lists_and_outside_trackers() -> None:
    from bot.duplicates.text import external_references

    assert claimed_issues("Fixed #24351, #24346 -- Added app_label") == {24351, 24346}
    assert claimed_issues("fixes #1 and #2 & #3; see #4") == {1, 2, 3}
    assert external_references(
        "Bug 702410 - Keep the ringtone",
        "https://code.djangoproject.com/ticket/31207#comment:3, ticket #55, "
        "https://bugzilla.mozilla.org/show_bug.cgi?id=702999",
    ) == {702410, 31207, 55, 702999}
    # Not every "bug" is a tracker's: a number of three digits or more must follow.
    assert external_references("Fix bug 2 in the parser; 2 bugs left") == set()


def test_markup_and_sign_offs_are_not_wording() -> None:
    body = (
        "Keep the socket open.\n"
        '<!-- Reviewable:start -->[<img src="https://reviewable.io/b.png" height=40 '
        'alt="Review on Reviewable"/>](https://reviewable.io/r/1)<!-- Reviewable:end -->\n'
        "![screenshot](https://x.example/s.png)\n"
        "Signed-off-by: Jane Dev <jane@example.com>\n"
        "Docker-DCO-1.1-Signed-off-by: Jane Dev (github: jdev)\n"
    )
    words = set(tokens(clean_body(body)))
    assert {"keep", "socket", "open"} <= words
    assert not words & {"img", "src", "height", "alt", "review", "screenshot", "jane", "sign"}
