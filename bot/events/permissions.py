"""Who may do what: command authorization and author trust, as pure functions."""

from __future__ import annotations

from collections.abc import Iterable

LEVELS = ("none", "read", "triage", "write", "maintain", "admin")


def effective_level(permission: str | None, role_name: str | None) -> str:
    """GitHub reports maintain/triage in ``role_name`` and folds them into write/read."""
    if role_name in LEVELS:
        return role_name  # type: ignore[return-value]
    return permission if permission in LEVELS else "none"


def command_allowed(
    allow: Iterable[str], *, commenter: str, pr_author: str | None, level: str | None
) -> bool:
    """Policy entries are 'author' and permission levels; any match allows the command."""
    allowed = set(allow)
    if "anyone" in allowed:
        return True
    if "author" in allowed and pr_author and commenter.lower() == pr_author.lower():
        return True
    return level is not None and level in allowed


def needs_permission_lookup(allow: Iterable[str], *, commenter: str, pr_author: str | None) -> bool:
    """Whether the decision needs a REST call (it does not when the author rule already allows)."""
    return not command_allowed(allow, commenter=commenter, pr_author=pr_author, level=None)


def is_trusted(author_association: str | None, trusted_associations: Iterable[str]) -> bool:
    return (author_association or "NONE").upper() in {a.upper() for a in trusted_associations}


APPROVER_LEVELS = ("write", "maintain", "admin")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "DISMISSED")


def may_approve(login: str, level: str | None, trusted_users: Iterable[str]) -> bool:
    """Write, maintain or admin access, or a login on the rules' trusted-users list."""
    return level in APPROVER_LEVELS or login.casefold() in {u.casefold() for u in trusted_users}


def reviews_of_head(reviews: Iterable[dict], head_sha: str) -> dict[str, tuple[str, str]]:
    """login (casefolded) -> (login, what) of each reviewer's latest deciding review: what is
    ``approved`` for an approval of ``head_sha``, ``approved_earlier`` for one of an earlier
    commit (it approved code the head has since changed), or the state itself."""
    found: dict[str, tuple[str, str]] = {}
    for review in reviews:
        login = ((review or {}).get("user") or {}).get("login")
        state = (review or {}).get("state")
        if not (isinstance(login, str) and login and state in REVIEW_STATES):
            continue
        what = str(state)
        if state == "APPROVED":
            what = "approved" if review.get("commit_id") == head_sha else "approved_earlier"
        found[login.casefold()] = (login, what)
    return found


def author_may_run(
    *,
    draft: bool,
    labels: Iterable[str],
    trusted_review: bool,
    author_labels: Iterable[str],
    after_review: bool,
    on_drafts: bool,
) -> tuple[bool, str]:
    """vLLM's rule for a PR's author (run_ci_command.py's ``authorize``): never on a draft;
    then with a delegating label on the PR, or after a trusted reviewer's approval."""
    wanted = list(author_labels)
    if draft and not on_drafts:
        return False, "PR authors cannot run GPU jobs while the PR is a draft"
    found = next((label for label in labels if label in wanted), None)
    if found is not None:
        return True, f"the {found} label"
    if after_review and trusted_review:
        return True, "an approval from a trusted reviewer"
    asks = ["approve the PR"] if after_review else []
    asks += [f"add the `{label}` label" for label in wanted[:1]]
    return False, "a reviewer with write access must " + (" or ".join(asks) or "approve") + " first"
