"""The jobs section redrawn from records: states, links, verdicts, the ratio table and chart."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime

from github_render import render_gfm

from bot.checks.base import Section, Status
from bot.jobs.progress import chart_label, mermaid_chart, overlay, safe_url
from bot.report.render import Report, render_markdown
from bot.store.jobs import JobKey, JobRecord
from bot.worker.ci.stored_report import report_from_json, report_to_json, with_job_progress

HEAD, BASE = "a" * 40, "b" * 40


def finding(name: str, kind: str = "gpu_smoke", status: str = "selected") -> dict:
    return {
        "name": name,
        "kind": kind,
        "hardware": "b200",
        "reason": "vllm/v1/attention/backends/mla/fast.py changed",
        "status": status,
        "engine": "buildkite",
        "url": None,
        "step_key": "k",
        "backends": ["FAST_MLA"] if kind == "benchmark" else [],
        "config": "mla_decode.yaml" if kind == "benchmark" else None,
    }


def section(*findings: dict) -> Section:
    return Section(
        "jobs", Status.PASS, "2 selected on b200", list(findings), {"problems": [], "dropped": []}
    )


def record(name: str, state: str, side: str = "head", results=None, **extra) -> JobRecord:
    return JobRecord(
        id=1,
        key=JobKey("acme/widgets", 7, HEAD, name, side),
        commit_sha=HEAD if side == "head" else BASE,
        kind=extra.get("kind", "gpu_smoke"),
        engine="buildkite",
        hardware="b200",
        step_key="k",
        spec={},
        state=state,
        attempt=1,
        dispatch_key="d",
        build_id="b",
        build_number=4,
        build_url="https://buildkite.com/acme/ci/builds/4",
        job_url=extra.get("job_url"),
        results=results,
        error=extra.get("error"),
        updated_at=datetime.now(UTC),
        signal=extra.get("signal"),
    )


def runs(mean: float, n: int, configs: list[str], seed: int) -> list[dict[str, float]]:
    rng = random.Random(seed)
    return [{c: mean * rng.lognormvariate(0, 0.01) for c in configs} for _ in range(n)]


def test_each_state_shows_with_its_link_and_the_section_fails_on_a_failure() -> None:
    smoke = finding("V1 attention (B200)")
    other = finding("Kernels (B200)")
    redrawn = overlay(
        section(smoke, other),
        [
            record("V1 attention (B200)", "running", job_url="https://buildkite.com/acme/ci/b/4#j"),
            record("Kernels (B200)", "failed", error="exit 1"),
        ],
    )
    states = [f["status"] for f in redrawn.findings]
    assert states == ["running", "failed"] and redrawn.status == Status.FAIL
    assert redrawn.data["pending"] is True
    assert "1 failed, 1 running" in redrawn.summary
    report = Report("acme/widgets", 7, HEAD, BASE, [redrawn])
    markdown = render_markdown(report)
    assert "[🏃 running](https://buildkite.com/acme/ci/b/4#j)" in markdown
    assert "❌ failed" in markdown and "exit 1" in markdown


def test_nothing_dispatched_keeps_the_checks_words() -> None:
    awaiting = finding("V1 attention (B200)", status="awaiting_approval")
    base = section(awaiting)
    redrawn = overlay(base, [record("V1 attention (B200)", "awaiting_approval")])
    assert (redrawn.status, redrawn.summary) == (base.status, base.summary)
    assert "approval command" in render_markdown(Report("a/b", 7, HEAD, BASE, [redrawn]))


def test_a_benchmark_gets_its_ratio_table_and_chart() -> None:
    configs = ["FAST_MLA 16q1s1k", "FAST_MLA 64q1s4k"]
    head = record("MLA decode", "passed", results=runs(1.10e-3, 5, configs, 1), kind="benchmark")
    base = record(
        "MLA decode", "passed", "base", results=runs(1.0e-3, 5, configs, 2), kind="benchmark"
    )
    redrawn = overlay(section(finding("MLA decode", "benchmark")), [head, base])
    (comparison, _) = redrawn.findings[0]["comparisons"]
    assert comparison["verdict"] == "regression" and comparison["low"] > 1.0
    assert redrawn.status == Status.WARN and "2 regressions" in redrawn.summary
    markdown = render_markdown(Report("acme/widgets", 7, HEAD, BASE, [redrawn]))
    assert "| Configuration | Base (ms) |" in markdown and "❌ regression" in markdown
    assert "```mermaid\nxychart-beta" in markdown and "bar [1.09" in markdown
    assert "| 1.099 |" in markdown
    assert f"`{BASE[:7]}`" in markdown and "5 base, 5 head" in markdown
    # Each row's reason is a line under the table, not a column (the comment is 780 px wide).
    header = next(line for line in markdown.splitlines() if line.startswith("| Configuration"))
    assert header.count("|") == 7 and "Why" not in header
    why = markdown.split("\nWhy:\n", 1)[1]
    assert f"- {configs[0]}: {comparison['reason']}" in why.replace("\\", "")
    assert comparison["reason"].startswith(f"{(comparison['ratio'] - 1):.1%} slower, significant")


def test_benchmark_labels_from_an_artifact_cannot_escape_the_table_or_the_chart() -> None:
    # The artifact comes out of the PR's own code: its labels are hostile text.
    hostile = 'X"] \n```\n<img src=x> @admin %%{init: {}}%% #12'
    head = record("MLA", "passed", results=runs(1.0, 3, [hostile], 1), kind="benchmark")
    base = record("MLA", "passed", "base", results=runs(1.0, 3, [hostile], 2), kind="benchmark")
    redrawn = overlay(section(finding("MLA", "benchmark")), [head, base])
    markdown = render_markdown(Report("acme/widgets", 7, HEAD, BASE, [redrawn]))
    chart = markdown.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert "%%" not in chart and "{" not in chart and "<img" not in chart
    assert chart.count('"') == 4 + 2  # the title's pair, the one label's pair, the axis'
    assert "<img" not in markdown and "@admin" not in markdown
    assert chart_label("a\nb`c") == "a_b_c"


def test_links_are_plain_http_urls_only() -> None:
    assert safe_url("https://buildkite.com/acme/ci/builds/4#x") is not None
    for url in ("javascript:alert(1)", "https://x.com/a)b", "https://x.com/ a", None, ""):
        assert safe_url(url) is None


def test_the_whole_report_survives_storage_and_only_jobs_is_redrawn() -> None:
    other = Section("changed_files", Status.PASS, "3 files", [], {"areas": {"x"}, "n": 1})
    jobs = section(finding("V1 attention (B200)"))
    report = Report("acme/widgets", 7, HEAD, BASE, [other, jobs])
    restored = report_from_json(report_to_json(report))
    assert restored.sections[0].data == {"areas": ["x"], "n": 1}
    redrawn = with_job_progress(restored, [record("V1 attention (B200)", "passed")])
    assert redrawn.sections[0] is restored.sections[0]
    assert redrawn.sections[1].findings[0]["status"] == "passed"


def test_the_chart_needs_a_ratio() -> None:
    assert mermaid_chart("x", [{"config": "a", "ratio": None}]) == ""


def test_the_report_shows_every_job_state() -> None:
    states = {
        "selected": "🔵 selected",
        "awaiting_approval": "⏸️ awaiting approval",
        "queued": "🕒 queued",
        "running": "🏃 running",
        "passed": "✅ passed",
        "failed": "❌ failed",
        "timed_out": "⌛ timed out",
        "canceled": "🚫 canceled",
    }
    names = {state: f"job {index}" for index, state in enumerate(states)}
    findings = [finding(name, status="selected") for name in names.values()]
    records = [record(names[state], state) for state in states if state != "selected"]
    redrawn = overlay(section(*findings), records)
    markdown = render_markdown(Report("acme/widgets", 7, HEAD, BASE, [redrawn]))
    for state, shown in states.items():
        row = next(line for line in markdown.splitlines() if f" **{names[state]}**:" in line)
        assert shown in row, state
    assert "1 timed out" in redrawn.summary and "1 awaiting approval" in redrawn.summary


def signal(classification: str, reason: str, base: str | None = None) -> dict:
    return {
        "classification": classification,
        "reason": reason,
        "evidence": [{"build_number": 900, "job_url": base, "why": "failed on the base branch"}],
        "base_job_url": base,
        "branch": "main",
    }


def test_classified_failures_are_grouped_new_first_and_only_new_fails_the_check() -> None:
    main_job = "https://buildkite.com/acme/ci/builds/900#m1"
    findings = [finding(n) for n in ("Flaky one", "Broken one", "New one", "Lucky one")]
    records = [
        record("Flaky one", "failed", signal=signal("flaky", "flips on main", main_job)),
        record("Broken one", "timed_out", signal=signal("broken_trunk", "failing on main")),
        record(
            "New one",
            "failed",
            job_url="https://buildkite.com/acme/ci/builds/4#n1",
            signal=signal("new", "passed in 20 of the last 20 completed run(s) on main"),
        ),
        record("Lucky one", "passed", signal=signal("flaky", "failed 1 time(s), then passed")),
    ]
    redrawn = overlay(section(*findings), records)
    groups = [(g["classification"], [j["name"] for j in g["jobs"]]) for g in redrawn.data["signal"]]
    assert groups == [
        ("new", ["New one"]),
        ("broken_trunk", ["Broken one"]),
        ("flaky", ["Flaky one", "Lucky one"]),
    ]
    assert redrawn.status == Status.FAIL
    assert "failures: 1 new, 1 broken trunk, 2 flaky" in redrawn.summary
    markdown = render_markdown(Report("acme/widgets", 7, HEAD, BASE, [redrawn]))
    new_at, flaky_at = markdown.index("New failures (1)"), markdown.index("Flaky (2)")
    assert new_at < markdown.index("broken trunk) (1)") < flaky_at
    assert "[New one](https://buildkite.com/acme/ci/builds/4#n1)" in markdown
    assert f"[same step on main]({main_job})" in markdown
    # Without the new failure, flaky and broken-trunk jobs do not fail the check.
    calm = overlay(section(*findings[:2], findings[3]), [records[0], records[1], records[3]])
    assert calm.status == Status.WARN
    # fail_on is the rules' to choose; a failure never classified still fails.
    assert overlay(section(*findings), records, fail_on=("new", "flaky")).status == Status.FAIL
    unclassified = overlay(section(findings[0]), [record("Flaky one", "failed")])
    assert unclassified.status == Status.FAIL and unclassified.data["signal"] == []


def test_a_classification_of_an_older_attempt_is_not_shown_on_a_running_job() -> None:
    redrawn = overlay(
        section(finding("Retried")), [record("Retried", "running", signal=signal("new", "x"))]
    )
    assert "classification" not in redrawn.findings[0]


def test_each_job_is_one_list_item_with_its_reason_not_a_wide_table() -> None:
    # On main the jobs were a five-column table whose Why column ran past GitHub's 780 px.
    why = "vllm/v1/attention/backends/mla/tokenspeed_mla.py changed; backends TOKENSPEED_MLA"
    job = finding("MLA decode benchmark", "benchmark") | {"reason": why}
    markdown = render_markdown(Report("acme/widgets", 7, HEAD, BASE, [section(job)]))
    html = render_gfm(markdown)
    assert "<table>" not in html
    [item] = re.findall(r"<li>(.*?)</li>", html, re.S)
    assert "<strong>MLA decode benchmark</strong>" in item and "on <code>b200</code>" in item
    status, reason = item.split("<br>", 1)
    assert status.startswith("🔵 selected <strong>MLA decode benchmark</strong>")
    assert "tokenspeed_mla.py changed; backends TOKENSPEED_MLA" in reason


def test_the_chart_names_the_backend_once_lays_labels_out_apart_and_starts_at_zero() -> None:
    # On main each of 18 batch specs was labelled "FLASHINFER_MLA 16q1s512" side by side under
    # vertical bars (they overlapped at 780 px, checked in Chromium with mermaid by
    # benchmarks/comment_rendering.py), and the ratio axis started at 0.9.
    specs = ["16q1s512", "16q1s1k", "32q1s8k", "64q1s4k", "128q1s8k", "32q1s32k"] * 3
    comparisons = [{"config": f"FLASHINFER_MLA {s}", "ratio": 0.97} for s in specs]
    chart = mermaid_chart("MLA decode benchmark", comparisons).splitlines()
    assert chart[0] == "xychart-beta horizontal"
    assert chart[1] == '    title "MLA decode benchmark, FLASHINFER_MLA: head time / base time"'
    assert chart[2].startswith('    x-axis ["16q1s512", "16q1s1k",')
    assert "FLASHINFER_MLA" not in chart[2]
    assert chart[3] == '    y-axis "head time / base time (1 = unchanged)" 0 --> 1.1'
    # Labels with no shared first word are kept whole.
    mixed = mermaid_chart("x", [{"config": "A 1", "ratio": 1.5}, {"config": "B 1", "ratio": 1}])
    assert '["A 1", "B 1"]' in mixed and "0 --> 1.5" in mixed


def test_a_failure_with_no_history_to_explain_it_fails_the_check_by_default() -> None:
    # With fail_on [new] alone, a repository whose GPU workflow runs only on dispatch (no
    # base-branch runs, so every failure is unknown) never got a red check for a real
    # failure. Unknown is the PR's until shown otherwise; the rules may still turn it off.
    records = [record("Lone one", "failed", signal=signal("unknown", "no runs on main"))]
    assert overlay(section(finding("Lone one")), records).status == Status.FAIL
    relaxed = overlay(section(finding("Lone one")), records, fail_on=("new",))
    assert relaxed.status == Status.WARN


def test_the_rules_setting_allow_different_gpus_reaches_the_benchmark_table() -> None:
    from bot.jobs.paired_runs import Side, parse_sides

    def gpu(uuid: str) -> bytes:
        return (
            "name, uuid, driver_version, clocks.current.sm [MHz], clocks.current.memory [MHz], "
            f"temperature.gpu\nNVIDIA H200, {uuid}, 580.159.04, 1980 MHz, 3201 MHz, 40\n"
        ).encode()

    base, head = (
        Side(machine=gpu("GPU-3f81f7ad-710f-44f4-328d-73a7754145b0")),
        Side(machine=gpu("GPU-697c774d-df4c-ea21-e17d-8801d254dfda")),
    )
    for n, (b, h) in enumerate(
        zip(runs(1e-3, 5, ["X 8q1s1k"], 1), runs(1e-3, 5, ["X 8q1s1k"], 2), strict=True), start=1
    ):
        base.runs[n] = json.dumps(
            [{"config": {"backend": "X", "batch_spec": "8q1s1k"}, "mean_time": b["X 8q1s1k"]}]
        ).encode()
        head.runs[n] = json.dumps(
            [{"config": {"backend": "X", "batch_spec": "8q1s1k"}, "mean_time": h["X 8q1s1k"]}]
        ).encode()
    bench = record(
        "Decode", "passed", results=[{"paired": parse_sides(base, head)}], kind="benchmark"
    )
    refused = overlay(section(finding("Decode", "benchmark")), [bench])
    (row,) = refused.data["benchmarks"][0]["rows"]
    assert row["verdict"] == "inconclusive" and "different GPUs are not compared" in row["reason"]
    allowed = overlay(section(finding("Decode", "benchmark")), [bench], allow_different_gpus=True)
    (row,) = allowed.data["benchmarks"][0]["rows"]
    assert row["verdict"] == "unchanged" and row["paired"] is False
    assert "compared unpaired (the rules allow different GPUs)" in row["reason"]
