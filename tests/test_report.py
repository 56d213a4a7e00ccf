import json

from bot import rules
from bot.checks import Section, Status, all_checks
from bot.checks.base import Check
from bot.report import MARKER, build_report, render_markdown
from bot.snapshot import snapshot_from_checkout


def _snapshot(git_repo, title="Add feature"):
    base = git_repo.commit({"vllm/x.py": "a\n"})
    head = git_repo.commit({"vllm/x.py": "b\n", "docs/x.md": "d\n"})
    snap = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/repo")
    snap.title = title
    snap.number = 7
    return snap


def test_registry_discovers_changed_files():
    assert "changed_files" in [c.name for c in all_checks()]


def test_report_json_follows_contract(git_repo, check_context):
    report = build_report(_snapshot(git_repo), rules.load_builtin("vllm"), check_context)
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
    report = build_report(
        _snapshot(git_repo), rules.load_builtin("vllm"), check_context, checks=(broken, healthy)
    )
    assert report.sections[0].status == Status.ERROR
    assert "RuntimeError: boom" in report.sections[0].summary
    assert report.sections[1].status == Status.PASS
    text = render_markdown(report)
    assert "RuntimeError: boom" in text


def test_markdown_has_marker_and_escapes_user_text(git_repo, check_context):
    report = build_report(_snapshot(git_repo), rules.load_builtin("vllm"), check_context)
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
    report = build_report(_snapshot(git_repo), rules.load_builtin("vllm"), check_context)
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
