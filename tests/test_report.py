import dataclasses
import json

from bot.checks import Section, Status, all_checks
from bot.checks.base import Check
from bot.core.snapshot import snapshot_from_checkout
from bot.report import rules
from bot.report.render import MARKER, Report, render_markdown
from bot.report.runner import run_checks


def _snapshot(git_repo, title="Add feature"):
    base = git_repo.commit({"vllm/x.py": "a\n"})
    head = git_repo.commit({"vllm/x.py": "b\n", "docs/x.md": "d\n"})
    snap = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/repo", trusted=True)
    snap = dataclasses.replace(snap, title=title)
    snap = dataclasses.replace(snap, number=7)
    return snap


def test_registry_discovers_changed_files():
    assert "changed_files" in [c.name for c in all_checks()]


def test_report_json_follows_contract(git_repo, check_context):
    report = run_checks(_snapshot(git_repo), rules.load_builtin("vllm"), check_context)
    data = json.loads(json.dumps(report.to_json()))
    assert data["version"] == 1 and data["repo"] == "org/repo" and data["pr"] == 7
    section = next(s for s in data["sections"] if s["check"] == "changed_files")
    assert section["status"] == "pass"
    assert "2 files" in section["summary"]


def test_a_raising_check_becomes_an_error_section(git_repo, check_context):
    def explode(snapshot, rules_, context):
        raise RuntimeError("boom")

    broken = Check(name="changed_files", title="Broken", run=explode)
    healthy = next(c for c in all_checks() if c.name == "changed_files")
    report = run_checks(
        _snapshot(git_repo), rules.load_builtin("vllm"), check_context, checks=(broken, healthy)
    )
    assert report.sections[0].status == Status.ERROR
    assert "RuntimeError: boom" in report.sections[0].summary
    assert report.sections[1].status == Status.PASS
    text = render_markdown(report)
    assert "RuntimeError: boom" in text


def test_markdown_has_marker_and_escapes_user_text(git_repo, check_context):
    report = run_checks(_snapshot(git_repo), rules.load_builtin("vllm"), check_context)
    report.sections.append(
        Section("changed_files", Status.WARN, "<img src=x> @octocat fixes #12 [x](http://e)")
    )
    text = render_markdown(report)
    assert text.startswith(MARKER)
    assert f"<!-- prbot:head={report.head_sha} -->" in text
    assert "<img" not in text and "&lt;img" in text
    assert "@octocat" not in text and "#12" not in text
    assert "[x](http://e)" not in text


def test_summary_links_only_the_prs_its_findings_name(git_repo, check_context):
    report = run_checks(_snapshot(git_repo), rules.load_builtin("vllm"), check_context)
    report.sections.append(
        Section(
            "duplicates",
            Status.WARN,
            "1 likely duplicate (#12); see #99 too",
            findings=[{"number": 12, "score": 0.9, "tier": "likely_duplicate", "evidence": []}],
        )
    )
    text = render_markdown(report)
    assert "(#12)" in text  # a finding: linked by GitHub
    assert "#99" not in text  # only text: stays inert


def test_fail_outranks_error_in_the_status_and_the_summary_line():
    from bot.report.render import render_summary_line

    sections = [
        Section("duplicates", Status.ERROR, "check crashed: RecursionError"),
        Section("generated_docs", Status.FAIL, "out of sync"),
        Section("changed_files", Status.PASS, "1 file"),
    ]
    report = Report("o/r", 1, "f" * 40, "e" * 40, sections)
    assert report.status == Status.FAIL
    assert render_summary_line(report) == "1 fail, 1 error, 1 pass"
    assert "### ❌ prbot: 1 fail, 1 error, 1 pass" in render_markdown(report)
    report.sections.pop(1)
    assert report.status == Status.ERROR


def test_every_summary_is_capped_however_it_is_set():
    from bot.checks.base import MAX_SUMMARY_CHARS, join_limited

    section = Section("integration", Status.WARN, "short")
    section.summary = "; ".join(f"name_{i} not yet in a requirement file" for i in range(2_500))
    assert len(section.summary) <= MAX_SUMMARY_CHARS
    assert section.summary.endswith("more characters)")
    assert section.to_json()["summary"] == section.summary
    assert join_limited([f"n{i}" for i in range(2_500)], limit=3) == "n0, n1, n2 and 2,497 more"
    assert join_limited(["a", "b"], limit=3) == "a, b"


def test_fair_shares_keep_small_sections_whole():
    from bot.report.render import fair_shares

    assert fair_shares([100, 50_000, 2_000], 10_000) == [100, 7_900, 2_000]
    assert fair_shares([9_000, 9_000], 10_000) == [5_000, 5_000]
    assert fair_shares([], 10) == []


def test_a_check_that_rejects_a_file_or_runs_out_of_memory_is_an_error_section(
    git_repo, check_context
):
    from bot.core.limits import InputRejected

    def rejects(snapshot, rules_, context):
        raise InputRejected("vllm/big.py", "is 75.0 MB, over the 16.0 MB limit; not read")

    def exhausts(snapshot, rules_, context):
        raise MemoryError

    def recurses(snapshot, rules_, context):
        return recurses(snapshot, rules_, context)

    checks = tuple(
        Check(name="changed_files", title="x", run=run) for run in (rejects, exhausts, recurses)
    )
    report = run_checks(_snapshot(git_repo), rules.load_builtin("vllm"), check_context, checks)
    rejected, memory, recursion = report.sections
    assert rejected.status == Status.ERROR
    assert rejected.summary == "`vllm/big.py` is 75.0 MB, over the 16.0 MB limit; not read"
    assert memory.status == Status.ERROR and "out of memory" in memory.summary
    assert recursion.status == Status.ERROR and "recursion" in recursion.summary


def test_a_finding_number_relinks_only_that_whole_number(git_repo, check_context):
    report = run_checks(_snapshot(git_repo), rules.load_builtin("vllm"), check_context)
    report.sections.append(
        Section(
            "duplicates",
            Status.WARN,
            "1 likely duplicate (#1); a title said #12 and #1x",
            findings=[{"number": 1, "score": 0.9, "tier": "likely_duplicate", "evidence": []}],
        )
    )
    text = render_markdown(report)
    assert "(#1)" in text
    assert "#12" not in text and "#\u200d12" in text
