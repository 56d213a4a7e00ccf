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


def test_approvers_are_writers_and_the_trusted_users_list():
    from bot.events.permissions import may_approve

    assert may_approve("maria", "write", []) and may_approve("root", "admin", [])
    assert may_approve("Helper", "read", ["helper"])  # logins compare case-insensitively
    assert not may_approve("mallory", "triage", ["helper"])
    assert not may_approve("mallory", None, [])


def test_each_reviewers_latest_deciding_review_counts():
    from bot.events.permissions import reviews_of_head

    reviews = [
        {"user": {"login": "Maria"}, "state": "APPROVED", "commit_id": "h"},
        {"user": {"login": "maria"}, "state": "CHANGES_REQUESTED", "commit_id": "h"},
        {"user": {"login": "bob"}, "state": "COMMENTED", "commit_id": "h"},  # decides nothing
        {"user": None, "state": "APPROVED"},
        None,
        {"user": {"login": "ann"}, "state": "APPROVED", "commit_id": "h"},
        {"user": {"login": "cy"}, "state": "APPROVED", "commit_id": "h"},
        {"user": {"login": "cy"}, "state": "APPROVED", "commit_id": "older"},
    ]
    assert reviews_of_head(reviews, "h") == {
        "maria": ("maria", "CHANGES_REQUESTED"),
        "ann": ("ann", "approved"),
        "cy": ("cy", "approved_earlier"),  # its latest review saw an earlier commit
    }


def test_an_author_runs_jobs_as_vllms_run_ci_command_says():
    from bot.events.permissions import author_may_run

    vllm = {"author_labels": ["ready", "ready-run-all-tests"], "after_review": True}
    base = {"draft": False, "labels": [], "trusted_review": False, "on_drafts": False, **vllm}
    assert author_may_run(**base) == (
        False,
        "a reviewer with write access must approve the PR or add the `ready` label first",
    )
    assert author_may_run(**{**base, "labels": ["ready-run-all-tests"]}) == (
        True,
        "the ready-run-all-tests label",
    )
    assert author_may_run(**{**base, "trusted_review": True})[0]
    drafted = author_may_run(**{**base, "draft": True, "labels": ["ready"]})
    assert drafted == (False, "PR authors cannot run GPU jobs while the PR is a draft")
    # Without delegation in the rules, an approving review delegates nothing.
    assert not author_may_run(**{**base, "after_review": False, "trusted_review": True})[0]
