"""What an autofix would write, whether prbot may push it, and what it says: no I/O.

The patches are the report's own: a generated doc's patch (from the base revision's sandboxed
generator, or prbot's extractor) and a compiled requirement file's re-run by uv. Nothing is
computed again here, so what is pushed is exactly what the report showed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bot.core.markdown import code_block, code_span, escape_text, truncate_markdown

# The check run's button (GitHub caps label at 20, description at 40, identifier at 20).
FIX_ACTION = {
    "label": "Apply fix",
    "description": "Push the report's fix as one commit",
    "identifier": "prbot_fix",
}
KINDS = ("docs", "requirements")
PUSH_LEVELS = frozenset({"write", "maintain", "admin"})
# One fix commit stays reviewable; a report never holds more than a few generated files.
MAX_PATCHES = 50
MAX_PATCH_CHARS = 2_000_000
# A comment is at most 65,536 characters; the suggestion leaves room for the reply's text.
MAX_COMMENT_CHARS = 60_000
COMMIT_TRAILER = "Pushed-by: prbot autofix"
_NEW_PATH = re.compile(r"^\+\+\+ (.*)$", re.M)
_OLD_PATH = re.compile(r"^--- (.*)$", re.M)
# Headers that make git apply do more than edit one file's text.
_GIT_HEADERS = re.compile(
    r"^(diff --git|rename |copy |new file mode|deleted file|old mode|new mode|similarity |Binary )",
    re.M,
)


@dataclass(frozen=True)
class FilePatch:
    """One file's patch from the report (a unified diff ``git apply`` takes)."""

    kind: str  # docs | requirements
    path: str
    patch: str


@dataclass(frozen=True)
class Decision:
    push: bool
    reason: str = ""  # why not, said to the person who asked


def parse_kinds(argument: str) -> tuple[tuple[str, ...], str | None]:
    """``/prbot fix [docs|requirements]``: (kinds, None) or ((), what is wrong)."""
    words = argument.lower().split()
    if not words:
        return KINDS, None
    unknown = [w for w in words if w not in KINDS]
    if unknown:
        return (), f"{unknown[0][:40]!r} is not something prbot fixes; say docs or requirements"
    return tuple(k for k in KINDS if k in words), None


def _patch_names_path(patch: str, path: str) -> bool:
    """Whether the patch edits the text of exactly the file the finding names, and nothing
    else. Conservative: a doc whose own lines look like diff headers is not pushed."""
    if _GIT_HEADERS.search(patch):
        return False
    return _NEW_PATH.findall(patch) == [f"b/{path}"] and _OLD_PATH.findall(patch) == [f"a/{path}"]


def fixes_in(report: dict[str, Any], kinds: Iterable[str] = KINDS) -> list[FilePatch]:
    """Every patch the report (its JSON) holds for ``kinds``, in report order, bounded."""
    wanted = set(kinds)
    found: list[FilePatch] = []
    for section in report.get("sections") or []:
        check = section.get("check")
        for finding in section.get("findings") or []:
            if not isinstance(finding, dict):
                continue
            if check == "generated_docs" and "docs" in wanted:
                found += _doc_fix(finding)
            elif check == "requirements" and "requirements" in wanted:
                found += _compiled_fixes(finding)
    unique = list({p.path: p for p in found}.values())  # a file once, even if two rows name it
    size = 0
    kept = []
    for item in unique[:MAX_PATCHES]:
        size += len(item.patch)
        if size > MAX_PATCH_CHARS:
            break
        kept.append(item)
    return kept


def _doc_fix(finding: dict[str, Any]) -> list[FilePatch]:
    patch, path = finding.get("patch"), finding.get("path")
    drifted = finding.get("cells") or finding.get("manual_edits")
    if not (isinstance(patch, str) and patch and isinstance(path, str) and drifted):
        return []
    return [FilePatch("docs", path, patch)] if _patch_names_path(patch, path) else []


def _compiled_fixes(finding: dict[str, Any]) -> list[FilePatch]:
    out = []
    for item in finding.get("compiled") or []:
        patch, path = item.get("fix_patch"), item.get("path")
        if item.get("rerun") != "differs" or not isinstance(patch, str) or not patch:
            continue
        if isinstance(path, str) and _patch_names_path(patch, path):
            out.append(FilePatch("requirements", path, patch))
    return out


def has_fix(report: dict[str, Any]) -> bool:
    return bool(fixes_in(report))


def decide(
    pull: dict[str, Any], fix_head: str, *, requester_level: str, dry_run: bool = False
) -> Decision:
    """Whether prbot pushes the fix computed for ``fix_head`` onto the PR (GitHub's view).

    Only onto that very head, only for someone with write access, only where GitHub lets
    maintainers edit the branch (a branch of the repository itself, or a fork that allows it).
    """
    head = pull.get("head") or {}
    if pull.get("state") != "open":
        return Decision(False, "the pull request is not open")
    if head.get("sha") != fix_head:
        now = str(head.get("sha") or "unknown")[:12]
        return Decision(
            False,
            f"the fix was computed for {fix_head[:12]}, but the head is now {now}; "
            "the report for the new head will offer its own fix",
        )
    if requester_level not in PUSH_LEVELS:
        return Decision(False, "pushing to a PR branch needs write access to the repository")
    head_repo = (head.get("repo") or {}).get("full_name")
    base_repo = ((pull.get("base") or {}).get("repo") or {}).get("full_name")
    if head_repo is None:
        return Decision(False, "the PR's branch is in a repository that no longer exists")
    if head_repo != base_repo and not pull.get("maintainer_can_modify"):
        return Decision(False, "the PR does not allow edits from maintainers")
    if dry_run:
        return Decision(False, "prbot runs in dry-run mode and pushes nothing")
    return Decision(True)


def commit_message(patches: list[FilePatch], fix_head: str, requester: str) -> str:
    kinds = sorted({p.kind for p in patches})
    what = " and ".join(
        {"docs": "generated docs", "requirements": "compiled requirements"}[k] for k in kinds
    )
    files = "\n".join(f"- {p.path}" for p in patches)
    return (
        f"Apply prbot's fix: regenerate {what}\n\n"
        f"The patches from prbot's report for {fix_head}, as asked by {requester}:\n"
        f"{files}\n\n{COMMIT_TRAILER}\n"
    )


def pushed_text(requester: str, new_sha: str, patches: list[FilePatch]) -> str:
    files = ", ".join(code_span(p.path) for p in patches)
    return (
        f"@{requester} prbot pushed {code_span(new_sha[:12])} with the report's fix for {files}. "
        "The checks run again on the new head."
    )


def nothing_text(requester: str, kinds: Iterable[str], head: str | None) -> str:
    what = " or ".join(kinds)
    where = f" for {code_span(head[:12])}" if head else ""
    return f"@{requester} the latest report{where} has no {what} fix to apply."


def suggestion_text(requester: str, reason: str, patches: list[FilePatch]) -> str:
    """The patch as a comment, with why prbot did not push it and how to apply it."""
    parts = [
        f"@{requester} prbot did not push the fix: {escape_text(reason)}.",
        "",
        "The patch, to apply with `git apply` from the repository's root:",
    ]
    for item in patches:
        parts += ["", f"{code_span(item.path)}:", "", str(code_block(item.patch, "diff"))]
    text = "\n".join(parts) + "\n"
    return truncate_markdown(
        text, MAX_COMMENT_CHARS, "…patch cut to fit a comment; the report's check run has it."
    )


def refused_text(requester: str, reason: str) -> str:
    return f"@{requester} prbot cannot apply the fix: {escape_text(reason)}."
