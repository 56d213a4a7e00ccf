"""Payload validation on its own: the JSON shape bound and the models of prbot's fields."""

from __future__ import annotations

import pytest

from bot.events.payloads import (
    MAX_JSON_CONTAINERS,
    PayloadRejected,
    check_shape,
    load_json,
    validate_event,
)


def test_depth_counts_brackets_outside_strings_only():
    check_shape(b'{"a": "[[[[[[[[" , "b": "\\\\\\"[[[["}')
    check_shape(b"[" * 200 + b"]" * 200)
    with pytest.raises(PayloadRejected, match="nested deeper than 200"):
        check_shape(b"[" * 201 + b"]" * 201)
    # Unbalanced and absurdly deep: refused before any parser sees it.
    with pytest.raises(PayloadRejected, match="nested deeper"):
        load_json(b"[" * 50_000)


def test_the_fast_parser_holds_the_same_depth_bound():
    # load_json's fast path relies on pydantic-core refusing what check_shape would.
    nested = b'{"a":' * 199 + b"1" + b"}" * 199
    assert load_json(nested)["a"]
    for too_deep in (b'{"a":' * 201 + b"1" + b"}" * 201, b"[" * 201 + b"]" * 201):
        with pytest.raises(PayloadRejected, match="nested deeper than 200"):
            load_json(too_deep)
    # What only the standard parser reads is still read: a lone surrogate escape.
    assert load_json(b'{"title": "\\ud800"}') == {"title": "\ud800"}


def test_container_count_is_bounded():
    with pytest.raises(PayloadRejected, match="arrays and objects"):
        check_shape(b"[" + b"[]," * MAX_JSON_CONTAINERS + b"[]]")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{oops", "body is not valid JSON"),
        (b"[1]", "payload must be a JSON object"),
        (b'{"a": 1' + b"0" * 5000 + b"}", "body is not valid JSON"),  # a 5,000-digit int
        (b'{"a": "\xff"}', "body is not valid JSON"),
    ],
)
def test_bad_json_is_one_line_reason(raw, reason):
    with pytest.raises(PayloadRejected) as err:
        load_json(raw)
    assert str(err.value).startswith(reason) and "\n" not in str(err.value)


def test_an_unmodelled_event_is_not_validated():
    assert validate_event("watch", {"anything": [1, 2]}) is None


def test_installation_ids_are_strict_bigints():
    for bad in (True, "5", 2**63, 0, 1.0):
        with pytest.raises(PayloadRejected, match="^installation.id: "):
            validate_event("installation", {"installation": {"id": bad}})
    assert validate_event("installation", {"installation": {"id": 2**63 - 1}}) is not None


def test_the_reason_never_echoes_the_input():
    secretish = "x" * 1000
    with pytest.raises(PayloadRejected) as err:
        validate_event("installation", {"installation": {"id": secretish}})
    assert secretish not in str(err.value) and len(str(err.value)) <= 300
