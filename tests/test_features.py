"""Advisory by default, features with the permissions they name (bot/core/features.py)."""

from __future__ import annotations

import pytest

from bot.core.features import (
    BASE_PERMISSIONS,
    UnknownFeature,
    events_for,
    missing_grants,
    parse_features,
    permissions_for,
)
from bot.report.rules import for_repository


def test_advisory_writes_only_comments_and_check_runs():
    writes = {p for p, (level, _) in permissions_for().items() if level == "write"}
    assert writes == {"issues", "checks"}
    assert "workflow_run" not in events_for()


def test_a_feature_raises_a_level_it_shares_with_advisory():
    assert permissions_for(["autofix"])["contents"][0] == "write"
    assert permissions_for(["autofix"]).keys() == BASE_PERMISSIONS.keys()
    assert permissions_for(["actions"])["actions"][0] == "write"
    assert "workflow_run" in events_for(["actions"])


def test_features_are_parsed_in_the_tables_order_and_unknown_ones_named():
    assert parse_features("actions, dispatch") == ("dispatch", "actions")
    assert parse_features("") == ()
    with pytest.raises(UnknownFeature, match="no feature 'gpu'"):
        parse_features("dispatch,gpu")


def test_a_feature_on_without_its_permission_is_one_line():
    granted = {"issues": "write", "checks": "write", "contents": "read"}
    [line] = missing_grants(["autofix"], granted)
    assert line.startswith("features.autofix is on but the App was not granted contents: write")
    assert "\n" not in line
    assert missing_grants(["autofix"], {**granted, "contents": "write"}) == []
    assert missing_grants(["autofix"], None) == []  # not known: nothing said


def test_rules_switch_features_on_and_default_to_advisory():
    assert for_repository("").features.on() == ()
    on = for_repository("features:\n  dispatch: true\n  autofix: true\n").features.on()
    assert on == ("dispatch", "autofix")
