"""The duplicates check: its section, statuses, and the rendered comment."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from duplicates_helpers import PATCH, REGISTRY, sample_records, write_export

from bot.checks import get_check
from bot.core.snapshot import ChangedFile, Snapshot
from bot.duplicates.export import load_index_from_export
from bot.report import rules
from bot.report.render import Report, render_markdown


def _snapshot(title: str, files: list[ChangedFile], author: str = "z") -> Snapshot:
    return Snapshot(
        repo="vllm-project/vllm",
        base_sha="a" * 40,
        head_sha="b" * 40,
        base=None,
        head=None,
        files=files,
        number=100,
        title=title,
        author=author,
    )


def test_check_section_lists_duplicates_first_and_folds_the_rest(tmp_path, check_context) -> None:
    files = [{"path": REGISTRY, "additions": 1, "deletions": 0, "patch": PATCH}]
    records = [
        {"number": n, "title": f"Add TokenSpeed MLA backend take {n}", "author": f"u{n}"}
        | {"files": files}
        for n in range(1, 7)
    ]
    records.append(
        {"number": 50, "title": "@here <b>x</b> ![i](http://x)", "author": "q", "files": files}
    )
    check_context = replace(
        check_context, open_prs=load_index_from_export(write_export(tmp_path / "p.jsonl", records))
    )
    ruleset = rules.load_builtin("default")
    snapshot = _snapshot("Add TokenSpeed MLA backend", [ChangedFile(REGISTRY, patch=PATCH)])
    check = get_check("duplicates")
    section = check.run(snapshot, ruleset.checks.duplicates, check_context)
    assert section.status == "warn"
    assert section.findings[0]["tier"] == "likely_duplicate"
    tiers = [f["tier"] for f in section.findings]
    assert tiers == sorted(tiers, key=lambda t: t != "likely_duplicate")
    report = Report("vllm-project/vllm", 100, "b" * 40, "a" * 40, [section])
    text = render_markdown(report)
    assert "Likely duplicates (same goal)" in text
    assert "more</summary>" in text  # beyond `show` the list folds
    assert "<b>x</b>" not in text and "@here" not in text and "![i]" not in text
    assert "`TOKENSPEED_MLA`" in text


def test_check_without_index_or_for_bots_is_skipped(check_context) -> None:
    rules_ = rules.load_builtin("default").checks.duplicates
    check = get_check("duplicates")
    assert check.run(_snapshot("x", []), rules_, check_context).status == "skip"
    check_context = replace(
        check_context, open_prs=load_index_from_export.__class__
    )  # any non-None index
    bot = _snapshot("Bump x", [], author="dependabot[bot]")
    assert "bot" in check.run(bot, rules_, check_context).summary


def test_nothing_found_says_so_in_one_line(tmp_path, check_context) -> None:
    check_context = replace(
        check_context,
        open_prs=load_index_from_export(write_export(tmp_path / "p.jsonl", sample_records())),
    )
    rules_ = rules.load_builtin("default").checks.duplicates
    section = get_check("duplicates").run(
        _snapshot("Refactor the tokenizer pool", []), rules_, check_context
    )
    assert section.status == "pass" and section.findings == []
    assert section.summary.startswith("no likely duplicates or overlapping work among 4")


def test_check_copes_with_a_huge_snapshot(tmp_path, check_context) -> None:
    check_context = replace(
        check_context,
        open_prs=load_index_from_export(write_export(tmp_path / "p.jsonl", sample_records())),
    )
    files = [ChangedFile(f"vllm/gen/f{i}.py", additions=1) for i in range(3_000)]
    files.append(ChangedFile("logo.png", binary=True))
    snapshot = _snapshot("Add TokenSpeed MLA backend", files)
    snapshot = dataclasses.replace(snapshot, body="x " * 200_000)
    rules_ = rules.load_builtin("default").checks.duplicates
    section = get_check("duplicates").run(snapshot, rules_, check_context)
    assert section.status in ("pass", "warn")


def test_evidence_links_the_issues_it_names_and_scores_read_plainly(
    tmp_path, check_context
) -> None:
    files = [{"path": REGISTRY, "additions": 1, "deletions": 0, "patch": PATCH}]
    other = {"number": 7, "title": "TokenSpeed MLA", "author": "u", "files": files}
    other["body"] = "Fixes #31877, fixes #31900"
    check_context = replace(
        check_context, open_prs=load_index_from_export(write_export(tmp_path / "p.jsonl", [other]))
    )
    snapshot = _snapshot("Add TokenSpeed MLA backend", [ChangedFile(REGISTRY, patch=PATCH)])
    snapshot = dataclasses.replace(snapshot, body="Closes #31877 and closes #31900")
    rules_ = rules.load_builtin("default").checks.duplicates
    section = get_check("duplicates").run(snapshot, rules_, check_context)
    assert section.findings[0]["evidence"][0] == "both fix #31877, #31900"
    text = render_markdown(Report("vllm-project/vllm", 100, "b" * 40, "a" * 40, [section]))
    # The bot's own issue numbers stay links (GitHub autolinks "#N"); titles stay inert.
    assert "both fix #31877, #31900" in text
    assert "(score 1.00)" in text or "(score 0.99)" in text


def test_candidates_without_a_file_in_common_are_related_not_overlapping(
    tmp_path, check_context
) -> None:
    def flag(path: str) -> dict:
        patch = "@@ -20,3 +20,4 @@\n ctx\n+    enabled: bool = False\n"
        return {"path": path, "additions": 1, "deletions": 0, "patch": patch}

    body = "Let users switch it off without removing the whole config."
    records = [
        {"number": 8, "title": "Add enabled flag to the tracing config", "body": body}
        | {"files": [flag("vllm/config/tracing.py")]},
        {"number": 9, "title": "Add enabled flag to the KV events config", "body": body}
        | {"files": [flag("vllm/config/kv_events.py")]},
    ]
    check_context = replace(
        check_context, open_prs=load_index_from_export(write_export(tmp_path / "p.jsonl", records))
    )
    snapshot = _snapshot("Add enabled flag to the KV events config", [])
    snapshot = dataclasses.replace(snapshot, body=body)
    snapshot = dataclasses.replace(
        snapshot, files=[ChangedFile("vllm/config/kv_events.py", patch=flag("x")["patch"])]
    )
    rules_ = rules.load_builtin("default").checks.duplicates
    section = get_check("duplicates").run(snapshot, rules_, check_context)
    # The same line in the same file: the same change. Alike wording and an alike line in
    # another file: related, and not claimed to touch the same code.
    assert [r["number"] for r in section.data["likely"]] == [9]
    assert [r["number"] for r in section.data["related"]] == [8]
    assert section.data["overlap"] == []
    text = render_markdown(Report("vllm-project/vllm", 100, "b" * 40, "a" * 40, [section]))
    assert "Related work (similar wording or names, no file in common)" in text


FLASHINFER_FILES = (
    "vllm/v1/attention/backends/flashinfer.py",
    "vllm/platforms/cuda.py",
    "tests/v1/attention/test_flashinfer.py",
    "docs/design/attention_backends.md",
)


def test_a_paths_only_open_pr_sharing_one_file_is_overlap_with_the_file_named(
    tmp_path, check_context
) -> None:
    # Open PRs filled in by the reconcile pass carry paths and line counts, never patches:
    # one shared file that is not hot is the only sign of a merge risk there is.
    selector = "vllm/v1/attention/selector.py"
    records = [
        {"number": 21, "title": "Prefer FlashInfer on Blackwell when the head size allows it"}
        | {"author": "r"}
        | {"files": [{"path": p, "additions": 9} for p in (selector, *FLASHINFER_FILES)]}
        | {"body": "Choose the backend by compute capability first."},
        {"number": 22, "title": "Let the attention package log its backend choice"}
        | {"author": "s", "files": [{"path": "vllm/v1/attention/layer.py", "additions": 3}]},
        {"number": 23, "title": "Export the version string", "author": "t"}
        | {"files": [{"path": "vllm/__init__.py", "additions": 1, "deletions": 1}]},
    ]
    check_context = replace(
        check_context, open_prs=load_index_from_export(write_export(tmp_path / "p.jsonl", records))
    )
    patch = "@@ -40,6 +40,9 @@ def get_attn_backend(\n ctx\n+    if use_mla:\n+        return MLA\n"
    snapshot = _snapshot(
        "Select the Triton MLA backend on ROCm",
        [
            ChangedFile(selector, additions=2, deletions=0, patch=patch),
            ChangedFile("vllm/v1/attention/backends/mla/triton_mla.py", additions=30, patch=""),
            ChangedFile("vllm/__init__.py", additions=1),
        ],
    )
    rules_ = rules.load_builtin("default").checks.duplicates
    section = get_check("duplicates").run(snapshot, rules_, check_context)
    overlap = {r["number"]: r for r in section.data["overlap"]}
    assert list(overlap) == [21]
    finding = next(f for f in section.findings if f["number"] == 21)
    assert finding["tier"] == "overlap"
    assert any(e.startswith("shares `") and "selector.py`" in e for e in finding["evidence"])
    # Same package, no file in common: at most related work, never overlap.
    assert 22 not in overlap
    assert 22 not in [r["number"] for r in section.data["likely"]]
    assert 23 not in [f["number"] for f in section.findings]  # a hot file only
    text = render_markdown(Report("vllm-project/vllm", 100, "b" * 40, "a" * 40, [section]))
    assert "Overlapping work" in text and "selector.py" in text


def test_a_merged_pr_doing_the_same_work_is_its_own_tier(tmp_path, check_context) -> None:
    files = [{"path": REGISTRY, "additions": 1, "deletions": 0, "patch": PATCH}]
    records = [
        {"number": 7, "title": "Add TokenSpeed MLA backend", "author": "u7", "files": files}
        | {"state": "closed", "merged_at": "2026-03-01T10:00:00Z"},
        {"number": 8, "title": "Tidy the scheduler", "author": "u8"},
    ]
    index = load_index_from_export(write_export(tmp_path / "p.jsonl", records))
    check_context = replace(check_context, open_prs=index)
    ruleset = rules.load_builtin("default")
    snapshot = _snapshot("Add TokenSpeed MLA backend", [ChangedFile(REGISTRY, patch=PATCH)])
    section = get_check("duplicates").run(snapshot, ruleset.checks.duplicates, check_context)
    [closed] = [f for f in section.findings if f["tier"] == "recently_closed"]
    assert closed["number"] == 7 and closed["state"] == "merged"
    assert "already merged: #7" in section.summary
    text = render_markdown(Report("vllm-project/vllm", 100, "b" * 40, "a" * 40, [section]))
    assert "**#7** (merged)" in text
