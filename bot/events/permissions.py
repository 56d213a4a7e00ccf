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
