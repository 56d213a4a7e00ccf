"""Payload validation on its own: the JSON shape bound and the models of prbot's fields."""

from __future__ import annotations

import pytest

from bot.payloads import (
    MAX_JSON_CONTAINERS,
    PayloadRejected,
    check_shape,
    load_json,
    validate_event,
)


def test_depth_counts_brackets_outside_strings_only():
    check_shape(b'{"a": "[[[[[[[[" , "b": "\\\\\\"[[[["}')
    check_shape(b"[" * 64 + b"]" * 64)
    with pytest.raises(PayloadRejected, match="nested deeper than 64"):
        check_shape(b"[" * 65 + b"]" * 65)
    # Unbalanced and absurdly deep: refused before any parser sees it.
    with pytest.raises(PayloadRejected, match="nested deeper"):
        load_json(b"[" * 50_000)


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
