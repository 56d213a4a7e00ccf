"""Metric labels come from closed sets: nothing a request or a user chose becomes one."""

from __future__ import annotations

from bot.metrics import endpoint_template, event_label


def test_event_labels_are_known_events_other_or_unverified():
    assert event_label("pull_request", verified=True) == "pull_request"
    assert event_label("x" * 8000, verified=True) == "other"
    assert event_label("pull_request", verified=False) == "unverified"
    assert event_label(None, verified=True) == "other"


def test_endpoint_templates_keep_api_words_and_hide_names():
    assert endpoint_template("/repos/o/r/issues/12/comments?page=2") == (
        "/repos/{repo}/issues/{n}/comments"
    )
    # A commenter's login (from a PR comment) and a GHES prefix never reach the label.
    assert endpoint_template("/api/v3/repos/o/r/collaborators/evil-user/permission") == (
        "/repos/{repo}/collaborators/{x}/permission"
    )
    sha = "0123456789abcdef" * 2 + "01234567"
    assert endpoint_template(f"https://ghes.example/api/v3/repos/o/r/commits/{sha}/check-runs") == (
        "/repos/{repo}/commits/{sha}/check-runs"
    )
    assert endpoint_template("/app/installations/5/access_tokens") == (
        "/app/installations/{n}/access_tokens"
    )


def test_endpoint_templates_are_bounded_in_length():
    deep = "/" + "/".join(f"part{i}" for i in range(50))
    assert endpoint_template(deep) == "/" + "/".join(["{x}"] * 8) + "/…"
