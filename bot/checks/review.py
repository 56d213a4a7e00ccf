"""review: points a reviewer would raise on new kernel-backend code, on the lines a PR adds.

The patterns live in :mod:`bot.review` (one module each); this module only feeds them the
snapshot's changed Python files at head and turns their flags into a section. Rules are
``checks.review`` (each pattern switchable, with its parameters); a flag is waived with
``# prbot: ignore[<pattern>]`` on its line.
"""

from __future__ import annotations

from collections import Counter

from bot.checks.base import Check, CheckContext, Section, Status
from bot.core.globs import path_matches
from bot.core.snapshot import ChangedFile, Snapshot
from bot.review.config import ReviewRules
from bot.review.engine import NOT_REVIEWED, LazyDeclared, review_files
from bot.review.optional_import import declared_distributions

# vLLM 0.33 has 40 requirement files; a head with thousands is not read past this many.
MAX_REQUIREMENT_FILES = 200


def _added(changed: ChangedFile, text: str | None) -> list[int] | None:
    if changed.patch:
        return [number for number, _ in changed.added_lines()]
    if changed.binary:
        return None
    if changed.status == "added" and text is not None:
        return list(range(1, text.count("\n") + 2))  # a new file's diff is every line
    if changed.additions == 0:
        return []  # a pure rename or a deletion-only change adds no line
    return None  # the patch was dropped as too large: the changed lines are unknown


def run(snapshot: Snapshot, rules: ReviewRules, context: CheckContext) -> Section:
    targets = [
        f
        for f in snapshot.files
        if f.status != "removed"
        and f.path.endswith(".py")
        and any(path_matches(f.path, glob) for glob in rules.paths)
    ]
    if not targets:
        return Section("review", Status.SKIP, "the PR changes no Python file the review reads")

    # Hot files (backends, kernels) first, in the order the rules list their globs, then in
    # path order: over max_files, what goes unreviewed is the shared code, not the backend
    # the points are about. (Path order alone put vllm/model_executor/layers/ before
    # vllm/v1/attention/: on 0.27.1..0.33.0 no attention backend was read.)
    def rank(changed: ChangedFile) -> tuple[int, str]:
        hot = (i for i, glob in enumerate(rules.hot_paths) if path_matches(changed.path, glob))
        return next(hot, len(rules.hot_paths)), changed.path

    targets.sort(key=rank)

    def head_declared() -> set[str]:
        globs = rules.silent_optional_import.requirement_files
        paths = [p for p in snapshot.head.list_paths() if any(path_matches(p, g) for g in globs)]
        # The head is the PR's: a bound on how many requirement files one question reads.
        paths = sorted(paths)[:MAX_REQUIREMENT_FILES]
        return declared_distributions({p: snapshot.head.read_text(p) or "" for p in paths})

    def inputs():
        for changed in targets:
            text = snapshot.head.read_text(changed.path)
            yield changed.path, text, _added(changed, text)

    result = review_files(inputs(), rules, LazyDeclared(head_declared))
    findings = result.findings()
    counts = Counter(f["pattern"] for f in findings if f["pattern"] != NOT_REVIEWED)
    skipped = len(findings) - sum(counts.values())
    if not findings:
        plural = "s" if result.files != 1 else ""
        return Section(
            "review",
            Status.PASS,
            f"{result.files} changed Python file{plural} read: no review points",
        )
    parts = [f"{n} {pattern}" for pattern, n in counts.items()]
    if skipped:
        parts.append(f"{skipped} file{'s' if skipped != 1 else ''} not reviewed")
    total = sum(counts.values())
    if total:
        head = f"{total} review point{'s' if total != 1 else ''} on changed lines"
    else:
        # Not "on changed lines": the files not reviewed have changed lines nobody read.
        head = f"no review points in the {result.files} file{'s' if result.files != 1 else ''} read"
    return Section("review", Status.WARN, f"{head}: {', '.join(parts)}", findings)


CHECK = Check(
    name="review",
    title="Review points",
    run=run,
    rules_model=ReviewRules,
    order=50,
    template="checks/review.md.j2",
)
