"""What the bot remembers: installations, PR heads, idempotent effects, reports, the cache."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from bot.checks.base import Cache
from bot.store.state import (
    StoreCache,
    begin_effect,
    current_head,
    finish_effect,
    forget_effect,
    get_effect,
    get_installation,
    latest_report,
    observe_head,
    pulls_at_head,
    record_installation,
    save_report,
)

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def test_installation_is_recorded_and_replaced(engine: sa.Engine) -> None:
    assert get_installation(engine, 7) is None
    record_installation(engine, 7, "org", ["org/b", "org/a"])
    first = get_installation(engine, 7)
    assert (first.account, first.repositories, first.deleted) == ("org", ["org/a", "org/b"], False)
    record_installation(engine, 7, "org", None)
    assert get_installation(engine, 7).repositories is None, "None: all repositories"
    record_installation(engine, 7, "org", None, deleted=True)
    assert get_installation(engine, 7).deleted is True


def test_newer_head_wins(engine: sa.Engine) -> None:
    assert current_head(engine, "org/repo", 1) is None
    assert observe_head(engine, "org/repo", 1, "aaa", T0) is True
    assert observe_head(engine, "org/repo", 1, "bbb", T0 + timedelta(minutes=5)) is True
    assert current_head(engine, "org/repo", 1) == "bbb"
    # A late job for the older head must not take over.
    assert observe_head(engine, "org/repo", 1, "aaa", T0) is False
    assert current_head(engine, "org/repo", 1) == "bbb"
    # Seeing the current head again (older timestamp from a replayed event) is fine.
    assert observe_head(engine, "org/repo", 1, "bbb", T0) is True
    assert current_head(engine, "org/repo", 1) == "bbb"
    # Other PRs and repos are separate.
    assert observe_head(engine, "org/repo", 2, "ccc", T0) is True
    assert observe_head(engine, "org/other", 1, "ddd", T0) is True
    assert current_head(engine, "org/repo", 1) == "bbb"


def test_pulls_at_a_head_are_found_by_their_newest_head(engine: sa.Engine) -> None:
    observe_head(engine, "org/repo", 3, "aaa", T0)
    observe_head(engine, "org/repo", 1, "aaa", T0)
    observe_head(engine, "org/repo", 2, "aaa", T0)
    observe_head(engine, "org/repo", 2, "bbb", T0 + timedelta(minutes=1))  # moved on
    observe_head(engine, "org/other", 4, "aaa", T0)
    assert pulls_at_head(engine, "org/repo", "aaa") == [1, 3]
    assert pulls_at_head(engine, "org/repo", "aaa", limit=1) == [1]
    assert pulls_at_head(engine, "org/repo", "ccc") == []


def test_head_times_compare_across_timezones(engine: sa.Engine) -> None:
    plus_two = datetime(2026, 3, 1, 11, 31, tzinfo=timezone(timedelta(hours=2)))
    observe_head(engine, "org/repo", 1, "aaa", T0)  # 09:30 UTC
    # 11:31 at UTC+2 is 09:31 UTC: newer by a minute, whatever its wall clock digits say.
    assert observe_head(engine, "org/repo", 1, "bbb", plus_two) is True
    assert observe_head(engine, "org/repo", 1, "ccc", T0 + timedelta(seconds=30)) is False


def test_effect_lifecycle(engine: sa.Engine) -> None:
    key = "comment:org/repo#12"
    assert get_effect(engine, key) is None
    pending = begin_effect(engine, key, head_sha="aaa")
    assert (pending.key, pending.state, pending.external_id, pending.head_sha) == (
        key,
        "pending",
        None,
        "aaa",
    )
    assert begin_effect(engine, key).state == "pending", "beginning again changes nothing"
    finish_effect(engine, key, 987654321, head_sha="aaa")
    done = get_effect(engine, key)
    assert (done.state, done.external_id, done.head_sha) == ("done", "987654321", "aaa")
    # The next head reuses the comment: begin returns the stored id to edit.
    again = begin_effect(engine, key, head_sha="bbb")
    assert (again.state, again.external_id) == ("done", "987654321")
    finish_effect(engine, key, None, head_sha="bbb")
    kept = get_effect(engine, key)
    assert (kept.external_id, kept.head_sha) == ("987654321", "bbb")
    assert kept.updated_at.tzinfo is not None
    assert forget_effect(engine, key) is True
    assert get_effect(engine, key) is None
    assert forget_effect(engine, key) is False


def test_finish_without_begin(engine: sa.Engine) -> None:
    finish_effect(engine, "unauthorized_reply:org/repo#3@abc", None)
    effect = get_effect(engine, "unauthorized_reply:org/repo#3@abc")
    assert (effect.state, effect.external_id, effect.head_sha) == ("done", None, None)


def test_reports_latest_per_pr_and_per_head(engine: sa.Engine) -> None:
    assert latest_report(engine, "org/repo", 5) is None
    first = {"version": 1, "repo": "org/repo", "pr": 5, "head_sha": "aaa", "sections": []}
    save_report(engine, "org/repo", 5, "aaa", "pass", first, "## ok")
    second = {**first, "head_sha": "bbb", "sections": [{"check": "jobs", "status": "warn"}]}
    save_report(engine, "org/repo", 5, "bbb", "warn", second, "## careful <b>")
    latest = latest_report(engine, "org/repo", 5)
    assert {k: latest[k] for k in ("repo", "number", "head_sha", "status", "markdown")} == {
        "repo": "org/repo",
        "number": 5,
        "head_sha": "bbb",
        "status": "warn",
        "markdown": "## careful <b>",
    }
    assert latest["report"] == second
    assert latest["created_at"].tzinfo is not None
    assert latest_report(engine, "org/repo", 5, head_sha="aaa")["report"] == first
    # Re-rendering a head replaces its report rather than adding another.
    save_report(engine, "org/repo", 5, "aaa", "fail", first, "## redone")
    assert latest_report(engine, "org/repo", 5)["markdown"] == "## redone"
    assert latest_report(engine, "org/repo", 6) is None
    assert latest_report(engine, "org/repo", 5, head_sha="zzz") is None


def test_store_cache(engine: sa.Engine) -> None:
    cache: Cache = StoreCache(engine)
    assert cache.get("uv", "key") is None
    cache.put("uv", "key", "first")
    cache.put("uv", "key", "second")
    cache.put("docs", "key", "other namespace")
    assert cache.get("uv", "key") == "second"
    assert cache.get("docs", "key") == "other namespace"
    long_key = "torch==2.5.0\n" * 2000
    cache.put("uv", long_key, "resolved ✓")
    assert cache.get("uv", long_key) == "resolved ✓"
    assert cache.get("uv", long_key + "x") is None
    assert StoreCache(engine).get("uv", "key") == "second", "shared through the database"


def test_naive_times_are_taken_as_utc(engine: sa.Engine) -> None:
    observe_head(engine, "org/repo", 1, "aaa", T0)
    naive_later = (T0 + timedelta(seconds=1)).replace(tzinfo=None)
    assert observe_head(engine, "org/repo", 1, "bbb", naive_later) is True
    assert observe_head(engine, "org/repo", 1, "ccc", T0) is False


def test_installation_needs_an_id(engine: sa.Engine) -> None:
    with pytest.raises(ValueError, match="installation id"):
        record_installation(engine, None, "org", None)  # type: ignore[arg-type]


def test_a_different_head_with_the_same_time_is_a_tie(engine):
    from bot.store.state import observe_head_verdict

    assert observe_head_verdict(engine, "org/repo", 9, "aaa", T0) == "current"
    assert observe_head_verdict(engine, "org/repo", 9, "aaa", T0) == "current"  # same head
    # Two pushes in one second: the later-handled one is stored, and the caller is told.
    assert observe_head_verdict(engine, "org/repo", 9, "bbb", T0) == "tied"
    assert current_head(engine, "org/repo", 9) == "bbb"
    assert observe_head_verdict(engine, "org/repo", 9, "ccc", T0 - timedelta(seconds=1)) == "older"
    assert (
        observe_head_verdict(engine, "org/repo", 9, "ccc", T0 + timedelta(seconds=1)) == "current"
    )


def test_a_push_from_the_stored_head_in_the_same_second_is_no_tie(engine):
    from bot.store.state import observe_head_verdict

    assert observe_head_verdict(engine, "org/repo", 10, "aaa", T0) == "current"
    assert observe_head_verdict(engine, "org/repo", 10, "bbb", T0, moved_from="aaa") == "current"
    assert current_head(engine, "org/repo", 10) == "bbb"
    # From some other head, in the same second: which came last is unknown.
    assert observe_head_verdict(engine, "org/repo", 10, "ccc", T0, moved_from="zzz") == "tied"
