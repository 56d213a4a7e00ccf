from bot.events.permissions import (
    command_allowed,
    effective_level,
    is_trusted,
    needs_permission_lookup,
)

POLICY = ["author", "write", "maintain", "admin"]


def test_author_is_allowed_without_lookup():
    assert not needs_permission_lookup(POLICY, commenter="Alice", pr_author="alice")
    assert command_allowed(POLICY, commenter="alice", pr_author="alice", level=None)


def test_levels_from_github_permission_and_role():
    assert effective_level("write", "maintain") == "maintain"
    assert effective_level("read", "triage") == "triage"
    assert effective_level("admin", None) == "admin"
    assert effective_level(None, "custom-role") == "none"


def test_read_access_is_refused_by_default_policy():
    assert needs_permission_lookup(POLICY, commenter="bob", pr_author="alice")
    assert not command_allowed(POLICY, commenter="bob", pr_author="alice", level="read")
    assert command_allowed(POLICY, commenter="bob", pr_author="alice", level="write")


def test_policy_without_author():
    assert not command_allowed(["admin"], commenter="alice", pr_author="alice", level="write")


def test_trust_by_association():
    assert is_trusted("MEMBER", ["OWNER", "MEMBER", "COLLABORATOR"])
    assert not is_trusted("FIRST_TIME_CONTRIBUTOR", ["OWNER", "MEMBER", "COLLABORATOR"])
    assert not is_trusted(None, ["OWNER"])
