"""duplicates: open PRs that are likely the same work, or touch the same code.

The open-PR index comes in as ``context.open_prs`` (``bot.duplicates.index.OpenPRIndex``:
the database in the server, a PR export with ``prbot check --open-prs``). Without one the
section is skipped and says so.
"""

from __future__ import annotations

from bot.checks.base import Check, CheckContext, Section, Status
from bot.core.snapshot import Snapshot
from bot.duplicates.config import DuplicatesRules
from bot.duplicates.features import features_from_snapshot, is_bot
from bot.duplicates.scoring import (
    LIKELY_DUPLICATE,
    Candidate,
)


def run(snapshot: Snapshot, rules: DuplicatesRules, context: CheckContext) -> Section:
    index = context.open_prs
    if index is None:
        return Section("duplicates", Status.SKIP, "no open-PR index available")
    config = rules.scoring_config()
    if is_bot(snapshot.author, config.bots):
        return Section("duplicates", Status.SKIP, f"{snapshot.author} is a bot; not audited")
    # Embedded without the repository's template lines, as the index's own PRs were written.
    features = features_from_snapshot(snapshot, template=index.template_lines())
    result = index.query(features, config, top=rules.top)
    likely = [c for c in result.candidates if c.tier == LIKELY_DUPLICATE]
    overlap = [c for c in result.candidates if c.tier != LIKELY_DUPLICATE and _shares_code(c)]
    # Listed for their wording or names alone: the same area of work, but no file in common,
    # so not a merge-conflict risk (the contract's tier stays "overlap").
    related = [c for c in result.candidates if c.tier != LIKELY_DUPLICATE and not _shares_code(c)]
    if likely:
        numbers = ", ".join(f"#{c.number}" for c in likely[:5])
        summary = f"{len(likely)} likely duplicate{'s' if len(likely) > 1 else ''} ({numbers})"
        if overlap:
            summary += f", {len(overlap)} overlapping"
    elif overlap:
        summary = f"no likely duplicates; {len(overlap)} open PRs touch the same code"
    elif related:
        summary = f"no likely duplicates or overlapping work; {len(related)} related open PRs"
    else:
        summary = f"no likely duplicates or overlapping work among {result.searched} open PRs"
    if result.closed:
        merged = [c for c in result.closed if c.state == "merged"]
        named = ", ".join(f"#{c.number}" for c in (merged or result.closed))
        summary += f"; already merged: {named}" if merged else f"; closed before: {named}"
    if result.stacked:
        summary += f"; same author: {', '.join(f'#{n}' for n in result.stacked[:5])} (stacked)"
    status = Status.WARN if likely else Status.PASS
    rows = [
        {
            "number": c.number,
            "title": c.title,
            "score": c.score,
            "tier": c.tier,
            "evidence": c.evidence,
        }
        for c in likely + overlap + related
    ]
    closed_rows = [
        {
            "number": c.number,
            "title": c.title,
            "score": c.score,
            "tier": CLOSED_TIER,
            "state": c.state,
            "evidence": c.evidence,
        }
        for c in result.closed
    ]
    closed_findings = [{**c.to_json(), "tier": CLOSED_TIER} for c in result.closed]
    return Section(
        "duplicates",
        status,
        summary,
        findings=[c.to_json() for c in likely + overlap + related] + closed_findings,
        data={
            "closed": closed_rows,
            "likely": rows[: len(likely)],
            "overlap": rows[len(likely) : len(likely) + len(overlap)],
            "related": rows[len(likely) + len(overlap) :],
            "show": rules.show,
            "stacked": result.stacked,
            "shared_commits": result.shared_commits,
            "searched": result.searched,
        },
    )


# The tier of recently merged or closed PRs that did the same work (findings carry ``state``:
# "merged" or "closed").
CLOSED_TIER = "recently_closed"


def _shares_code(candidate: Candidate) -> bool:
    """Whether the two PRs change at least one file in common."""
    return candidate.signals.get("no_shared_file", 1.0) == 0.0


CHECK = Check(
    name="duplicates",
    title="Duplicate work",
    run=run,
    rules_model=DuplicatesRules,
    order=10,
    template="checks/duplicates.md.j2",
)
