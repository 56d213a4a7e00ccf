"""The review section end to end: a git fixture, the vLLM rules, JSON and the comment."""

from __future__ import annotations

import json

import pytest

from bot.checks import Section, Status, all_checks, get_check
from bot.core.markdown import code_span
from bot.core.snapshot import snapshot_from_checkout
from bot.report import rules
from bot.report.render import Report, render_markdown
from bot.report.runner import run_checks

BACKEND = "vllm/v1/attention/backends/mla/swift_mla.py"
BASE_BACKEND = '''"""SwiftMLA decode backend."""

import torch


class SwiftMLAImpl:
    def __init__(self, scale):
        self.scale = scale
        self.bmm1_scale = None

    def forward_mqa(self, q, kv_cache, attn_metadata, layer):
        return decode(q, kv_cache, self.scale)
'''
LAZY_SCALE = """    def forward_mqa(self, q, kv_cache, attn_metadata, layer):
        if self.bmm1_scale is None:
            self.bmm1_scale = self.scale * layer._q_scale_float
        return decode(q, kv_cache, self.bmm1_scale)
"""
PROBE = """

def swift_available() -> bool:
    try:
        import swift_attn  # noqa: F401
    except ImportError:
        return False
    return True
"""
REQUIREMENTS = {
    "requirements/cuda.txt": "-r common.txt\ntorch==2.9.0\n",
    "requirements/common.txt": "",
}


def _section(git_repo, check_context, head_files, rule_text: str | None = None):
    base = git_repo.commit({BACKEND: BASE_BACKEND, **REQUIREMENTS}, "base")
    head = git_repo.commit(head_files, "change")
    snapshot = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/vllm", trusted=True)
    ruleset = rules.for_repository(rule_text, default="vllm")
    try:
        return get_check("review").run(snapshot, ruleset.checks.review, check_context), snapshot
    finally:
        snapshot.close()


def _changed_backend() -> str:
    old = "    def forward_mqa(self, q, kv_cache, attn_metadata, layer):\n"
    old += "        return decode(q, kv_cache, self.scale)\n"
    return BASE_BACKEND.replace(old, LAZY_SCALE) + PROBE


def test_flags_carry_pattern_line_snippet_why_rule_and_waiver(git_repo, check_context):
    section, snapshot = _section(git_repo, check_context, {BACKEND: _changed_backend()})
    assert section.status == Status.WARN
    assert [f["pattern"] for f in section.findings] == ["lazy-cache", "silent-optional-import"]
    lazy = section.findings[0]
    head_lines = _changed_backend().splitlines()
    assert head_lines[lazy["line"] - 1].strip() == lazy["snippet"] == "if self.bmm1_scale is None:"
    assert lazy["path"] == BACKEND and lazy["introduced_at"] == f"{BACKEND}:{lazy['line']}"
    assert lazy["rule"] == "checks.review.lazy_cache"
    assert lazy["waiver"] == "# prbot: ignore[lazy-cache]"
    assert "1 lazy-cache, 1 silent-optional-import" in section.summary
    json.dumps(section.to_json())  # the contract is plain JSON

    report = Report("org/vllm", 7, snapshot.head_sha, snapshot.base_sha, [section])
    text = render_markdown(report)
    link = f"https://github.com/org/vllm/blob/{snapshot.head_sha}/{BACKEND}#L{lazy['line']}"
    assert f"[`{BACKEND}:{lazy['line']}`]({link})" in text
    assert "`# prbot: ignore[lazy-cache]`" in text


def test_unchanged_code_is_never_flagged(git_repo, check_context):
    # The same lazy scale already at base: the PR only adds a docstring line elsewhere.
    base_with_issue = BASE_BACKEND.replace(
        "    def forward_mqa(self, q, kv_cache, attn_metadata, layer):\n"
        "        return decode(q, kv_cache, self.scale)\n",
        LAZY_SCALE,
    )
    base = git_repo.commit({BACKEND: base_with_issue, **REQUIREMENTS}, "base")
    head = git_repo.commit({BACKEND: base_with_issue.replace("decode backend", "decoder")})
    snapshot = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/vllm", trusted=True)
    section = get_check("review").run(
        snapshot, rules.load_builtin("vllm").checks.review, check_context
    )
    snapshot.close()
    assert section.status == Status.PASS and section.findings == []
    assert section.summary == "1 changed Python file read: no review points"


def test_a_declared_requirement_and_a_switched_off_pattern(git_repo, check_context):
    head = {BACKEND: _changed_backend(), "requirements/cuda.txt": "torch==2.9.0\nswift-attn==1\n"}
    off = "checks:\n  review:\n    lazy_cache:\n      enabled: false\n"
    section, _ = _section(git_repo, check_context, head, off)
    assert section.status == Status.PASS and section.findings == []


def test_hostile_code_is_escaped_in_the_comment(git_repo, check_context):
    hostile = _changed_backend().replace(
        "if self.bmm1_scale is None:",
        "if self.bmm1_scale is None:  # @admin see #1 <img src=x> | `` ` ",
    )
    section, snapshot = _section(git_repo, check_context, {BACKEND: hostile})
    text = render_markdown(Report("org/vllm", 7, snapshot.head_sha, snapshot.base_sha, [section]))
    row = next(line for line in text.splitlines() if "lazy-cache" in line and "@" in line)
    snippet = section.findings[0]["snippet"]
    # The code is shown as a code span (no mention, tag or link inside one), fenced longer
    # than any backtick run in it, with the table separator escaped.
    span = code_span(snippet)
    assert str(span).startswith("``` ") and "\\|" in span
    assert span in row
    outside = row.replace(span, "")
    assert "@admin" not in outside and "<img" not in outside
    assert " | " not in outside  # a list item per point now: no table cell to break out of


def test_unparsable_head_file_is_a_finding_and_other_checks_still_run(git_repo, check_context):
    base = git_repo.commit({BACKEND: BASE_BACKEND, **REQUIREMENTS}, "base")
    head = git_repo.commit({BACKEND: BASE_BACKEND + "\ndef broken(:\n"})
    snapshot = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/vllm", trusted=True)
    report = run_checks(snapshot, rules.load_builtin("vllm"), check_context)
    snapshot.close()
    review = next(s for s in report.sections if s.check == "review")
    assert review.status == Status.WARN
    assert review.findings[0]["pattern"] == "not-reviewed"
    assert "does not parse" in review.findings[0]["why"]
    assert all(s.status != Status.ERROR for s in report.sections)
    assert "Not reviewed:" in render_markdown(report)


def test_no_python_change_skips(git_repo, check_context):
    section, _ = _section(git_repo, check_context, {"README.md": "docs\n"})
    assert section.status == Status.SKIP


@pytest.mark.parametrize(
    "bad, field",
    [
        ("checks:\n  review:\n    lazy_cache:\n      hot_method: [x]\n", "hot_method"),
        ("checks:\n  review:\n    unbounded_cache:\n      key_names: '('\n", "key_names"),
    ],
)
def test_bad_review_rules_name_the_field(bad, field):
    with pytest.raises(rules.RulesError) as caught:
        rules.load_text(bad, ".github/prbot.yml", default="vllm")
    assert field in str(caught.value)


def test_a_flood_of_points_is_cut_in_the_comment_not_in_the_json():
    findings = [
        {
            "pattern": "lazy-cache",
            "path": BACKEND,
            "line": n,
            "snippet": f"if self.s{n} is None:",
            "why": "kept",
            "rule": "checks.review.lazy_cache",
            "waiver": "# prbot: ignore[lazy-cache]",
            "introduced_at": f"{BACKEND}:{n}",
        }
        for n in range(1, 121)
    ]
    section = Section("review", Status.WARN, "120 review points", findings)
    text = render_markdown(Report("org/vllm", 7, "a" * 40, "b" * 40, [section]))
    assert text.count("- `lazy-cache` at ") == 50
    assert "…and 70 more in the check's JSON." in text
    assert len(section.to_json()["findings"]) == 120


def test_the_section_sits_after_integration_in_the_report():
    names = [c.name for c in all_checks()]
    assert names.index("integration") < names.index("review") < names.index("changed_files")


def test_over_the_file_limit_hot_files_come_first_and_every_skipped_file_is_named(
    git_repo, check_context
):
    # Shared code sorts before the backend alphabetically; with room for two files the
    # backend (a hot path) is still reviewed, and the two files left are each counted.
    shared = {f"vllm/aaa/helper_{n}.py": f"x = {n}\n" for n in range(3)}
    limit = "checks:\n  review:\n    max_files: 2\n"
    section, _ = _section(git_repo, check_context, {BACKEND: _changed_backend(), **shared}, limit)
    points = [f for f in section.findings if f["pattern"] != "not-reviewed"]
    skipped = [f for f in section.findings if f["pattern"] == "not-reviewed"]
    assert {f["path"] for f in points} == {BACKEND}
    assert [f["path"] for f in skipped] == ["vllm/aaa/helper_1.py", "vllm/aaa/helper_2.py"]
    assert section.summary.endswith("2 files not reviewed")
    report = Report("org/vllm", 7, "a" * 40, "b" * 40, [section])
    text = render_markdown(report)
    assert "<summary>Not reviewed: 2 files</summary>" in text
    assert "- `vllm/aaa/helper_1.py` past the 2-file limit\n" in text
    assert "\\`" not in text  # no escaped, literal backtick


def test_over_the_file_limit_hot_globs_are_read_in_the_order_the_rules_list_them(
    git_repo, check_context
):
    # vLLM's hot_paths name vllm/v1/attention/** before vllm/model_executor/layers/**, which
    # sorts first by path: on 0.27.1..0.33.0 (over 300 hot files) no attention backend was
    # read. The backend is reviewed; the layers files are the ones left.
    layers = {f"vllm/model_executor/layers/helper_{n}.py": f"x = {n}\n" for n in range(3)}
    limit = "checks:\n  review:\n    max_files: 2\n"
    section, _ = _section(git_repo, check_context, {BACKEND: _changed_backend(), **layers}, limit)
    points = [f for f in section.findings if f["pattern"] != "not-reviewed"]
    skipped = [f["path"] for f in section.findings if f["pattern"] == "not-reviewed"]
    assert {f["path"] for f in points} == {BACKEND}
    assert skipped == [
        "vllm/model_executor/layers/helper_1.py",
        "vllm/model_executor/layers/helper_2.py",
    ]


def test_no_points_with_files_left_unread_says_how_many_were_read(git_repo, check_context):
    # "no review points on changed lines" was untrue: the files past the limit have changed
    # lines nobody read.
    layers = {f"vllm/model_executor/layers/helper_{n}.py": f"x = {n}\n" for n in range(3)}
    limit = "checks:\n  review:\n    max_files: 2\n"
    section, _ = _section(git_repo, check_context, layers, limit)
    assert section.status == Status.WARN
    assert section.summary == "no review points in the 2 files read: 1 file not reviewed"


def test_points_are_a_list_with_the_reason_first(git_repo, check_context):
    # A table's Why column ran past GitHub's 780 px comment width.
    section, snapshot = _section(git_repo, check_context, {BACKEND: _changed_backend()})
    report = Report("org/vllm", 7, snapshot.head_sha, snapshot.base_sha, [section])
    text = render_markdown(report)
    assert "| Pattern | At |" not in text
    assert "- `lazy-cache` at [`vllm/v1/" in text and ": self.bmm1\\_scale is set once" in text
