"""The comment as GitHub renders it: prbot's Markdown through cmark-gfm (GitHub's parser).

The demo's report (the same repository, PRs and rules as ``prbot demo``) is built in-process
and rendered; the assertions are on the HTML a reader's browser gets.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from github_render import ZERO_WIDTH, HtmlShape, render_gfm

from bot.checks import CheckContext, Section, Status
from bot.cli.demo import BASE_FILES, PULLS
from bot.core.snapshot import snapshot_from_checkout
from bot.duplicates.export import load_index_from_export
from bot.report import rules
from bot.report.render import MAX_COMMENT_CHARS, Report, render_markdown
from bot.report.runner import run_checks

HTML_BASE = "https://github.com"


def _demo_report(make_repo, tmp_path) -> Report:
    """The second demo PR's report: duplicates (against the first), requirements, integration."""
    repo = make_repo("vllm-lite")
    base = repo.commit(BASE_FILES, "base")
    first, second = PULLS
    repo.branch("first", base)
    repo.commit(first["files"], first["title"])
    first_files = [
        {"path": path, "patch": repo.git("diff", base, "first", "--", path)}
        for path in first["files"]
    ]
    export = tmp_path / "open-prs.jsonl"
    record = {"number": 1, "title": first["title"], "body": first["body"]}
    export.write_text(json.dumps({**record, "author": first["author"], "files": first_files}))
    repo.branch("second", base)
    head = repo.commit(second["files"], second["title"])
    snapshot = snapshot_from_checkout(
        repo.path, base, head, repo_name="acme/vllm-lite", trusted=True
    )
    snapshot = dataclasses.replace(snapshot, number=2, title=second["title"], body=second["body"])
    ruleset = rules.for_repository(BASE_FILES[rules.REPO_RULES_PATH])
    work = tmp_path / "work"
    work.mkdir()
    context = CheckContext(work_dir=work, open_prs=load_index_from_export(str(export)))
    return run_checks(snapshot, ruleset, context)


@pytest.fixture
def demo_comment(make_repo, tmp_path) -> str:
    return render_markdown(_demo_report(make_repo, tmp_path), html_base=HTML_BASE)


def _assert_renders_cleanly(markdown: str) -> HtmlShape:
    html = render_gfm(markdown)
    shape = HtmlShape(html)
    assert shape.opened.get("details") == shape.closed.get("details")
    assert shape.opened.get("summary") == shape.closed.get("summary")
    # Markdown is not parsed in a one-line <summary>: no backtick or backslash may reach it.
    for text in shape.summaries:
        assert "`" not in text and "\\" not in text, text
    # A fold cut open, or a fence left open, would show prbot's own tags as text.
    assert "&lt;/details&gt;" not in html and "&lt;details&gt;" not in html
    return shape


def test_the_demo_comment_renders_cleanly(demo_comment):
    assert "TOKENSPEED_MLA" in demo_comment  # the report really is the demo's
    shape = _assert_renders_cleanly(demo_comment)
    html = render_gfm(demo_comment)
    assert ZERO_WIDTH.search(html) is None
    assert shape.opened["details"] >= 4
    # Machine text in a summary is <code>, not Markdown backticks.
    assert any("<code>cuda</code>" in raw for raw in shape.summary_raw)
    # Only links prbot made: into the repository, and to the PR it names.
    assert shape.hrefs and all(h.startswith(f"{HTML_BASE}/acme/vllm-lite/") for h in shape.hrefs)


def test_each_summary_line_is_said_once(demo_comment):
    report_lines = [
        line for line in demo_comment.splitlines() if "**Integration checklist**" in line
    ]
    assert len(report_lines) == 1
    summary = report_lines[0].split("**: ", 1)[1].strip()
    assert demo_comment.count(summary) == 1
    # The fold is titled by what it holds, not by the summary again.
    assert "<summary>Details: Integration checklist</summary>" in demo_comment


HOSTILE = (
    "<img src=x onerror=alert(1)> <script>x</script> [click](http://evil.example) "
    "see https://github.com/acme/vllm-lite/pull/1 and www.evil.example @octocat"
)


def test_user_text_stays_text_and_urls_copy_intact():
    report = Report("acme/vllm-lite", 3, "a" * 40, "b" * 40)
    report.sections.append(Section("changed_files", Status.WARN, HOSTILE))
    markdown = render_markdown(report, html_base=HTML_BASE)
    html = render_gfm(markdown)
    shape = _assert_renders_cleanly(markdown)
    assert "img" not in shape.opened and "script" not in shape.opened
    assert shape.hrefs == []  # no link from user text, not even the bare URLs
    # The URL reads (and copies) as it was written: no joiner or backslash inside it.
    assert "https://github.com/acme/vllm-lite/pull/1" in html
    assert "www.evil.example" in html
    for url in re.findall(r"(?:https?://|www\.)\S+", html):
        assert ZERO_WIDTH.search(url) is None, url


def test_a_cut_report_keeps_every_fold_and_fence_closed(make_repo, tmp_path):
    """Patches far over GitHub's limit: the cut lands between blocks, and both folds close."""
    report = _demo_report(make_repo, tmp_path)
    patch = "".join(f"+| row {i} | `{i}` | <b>{i}</b> |\n" for i in range(800))
    findings = [
        {"path": f"docs/huge{n}.md", "in_sync": False, "cells": [], "patch": patch}
        | {
            "manual_edits": [],
            "problems": [],
            "notes": [],
            "kind": "builtin",
            "preview": [],
            "fix_command": "prbot docs --write",
        }
        for n in range(5)
    ]
    report.sections.append(
        Section("generated_docs", Status.FAIL, "5 docs out of date", findings=findings)
    )
    markdown = render_markdown(report, html_base=HTML_BASE)
    assert len(markdown) <= MAX_COMMENT_CHARS
    _assert_renders_cleanly(markdown)
    assert "prbot check --format json" in markdown  # the reader is told where the rest is


def test_an_integration_section_with_no_finding_has_no_empty_rules_line_nor_backticks():
    from bot.report.render import Report, render_markdown

    problems = {"problems": ["`vllm/a.py` does not parse (line 3)"]}
    section = Section("integration", Status.WARN, "x", [], data=problems)
    text = render_markdown(Report("o/r", 1, "a" * 40, "b" * 40, [section]))
    assert "Rules:" not in text
    assert "`vllm/a.py` does not parse (line 3)." in text and "\\`" not in text


def test_buildkite_emoji_shortcodes_are_not_shown_as_text():
    from bot.report.render import Report, render_markdown

    job = {
        "name": ":nvidia: (B200) V1 Attention",
        "kind": "gpu_smoke",
        "hardware": "b200-k8s",
        "reason": "r",
        "status": "selected",
        "engine": "buildkite",
        "url": None,
        "step_key": "v1-attention-b200",
        "backends": [],
        "config": None,
    }
    section = Section("jobs", Status.PASS, "1 smoke test selected on b200-k8s", [job])
    text = render_markdown(Report("o/r", 1, "a" * 40, "b" * 40, [section]))
    assert "(B200) V1 Attention" in text and ":nvidia:" not in text


INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)


def test_bidi_and_control_characters_reach_github_as_code_points(tmp_path):
    # On main a file named with U+202E (shown reversed) and a title with BEL and ESC reached
    # the comment and the check run's text raw (issue 21, item 13).
    from invariant_helpers import REPO, report_comments

    from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for

    evil = "widgets/evil\u202etxt.py"
    with LocalStack(tmp_path / "stack") as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        gh.commit(REPO, "feature", {evil: "x = 1\n", "b\u200bc\x07.py": "y = 2\n"}, "add")
        number = gh.open_pull_request(
            REPO, head_branch="feature", title="Odd \x1b[31mnames", body="b", author="alice"
        )["number"]
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        [comment] = wait_for(lambda: report_comments(gh, number), what="the report")
        wait_for(stack.idle, what="idle queue")
        [run] = gh.check_runs(REPO)
    output = run["output"]
    for text in (comment["body"], output["title"], output["summary"], output.get("text") or ""):
        assert not INVISIBLE.findall(text), INVISIBLE.findall(text)
    assert "evil&lt;U+202E&gt;txt.py" in comment["body"] or "evil<U+202E>txt.py" in comment["body"]


def test_a_skipped_section_carries_no_fold():
    # On main a skipped jobs section with data (dropped jobs, the hardware line) drew a fold.
    data = {"dropped": ["v1-attention-h100 (h100)"], "problems": [], "target": "any GPU"}
    skipped = Section("jobs", Status.SKIP, "no GPU job needed", data=data)
    kept = Section("integration", Status.WARN, "x", [], {"problems": ["`a.py` does not parse"]})
    text = render_markdown(Report("o/r", 1, "a" * 40, "b" * 40, [skipped, kept]))
    shape = HtmlShape(render_gfm(text))
    assert "⏭️ **GPU jobs**: no GPU job needed" in text
    assert "Details: GPU jobs" not in text and "v1-attention-h100" not in text
    assert shape.opened.get("details") == text.count("<details>") >= 1  # the other one stays


def test_integration_notes_quote_machine_text_as_code_not_literal_backticks():
    # vLLM 0.27.1 -> 0.33.0: the opt-in reason and an optional import's guard carried quoted
    # names, shown on main as literal backticks.
    base = {"path": "vllm/a.py", "line": 3, "introduced_at": "vllm/a.py:3", "missing_in": []}
    base |= {"rule": "attention-backend"}
    opt_in = base | {
        "symbol": "B12X",
        "where": "CUDA priority lists",
        "optional": True,
        "opt_in": "opt-in: needs `b12x` (probed for at `vllm/utils/b12x.py:25`)",
    }
    guard = base | {"symbol": "moonep", "where": "requirements", "optional": True,
                    "guard": "a `type: ignore[import-not-found]` mark"}  # fmt: skip
    section = Section("integration", Status.PASS, "x", [opt_in, guard], data={})
    html = render_gfm(render_markdown(Report("o/r", 1, "a" * 40, "b" * 40, [section])))
    assert "<code>b12x</code>" in html and "<code>vllm/utils/b12x.py:25</code>" in html
    assert "<code>type: ignore[import-not-found]</code>" in html
    assert "`" not in re.sub(r"<code>.*?</code>", "", html)
