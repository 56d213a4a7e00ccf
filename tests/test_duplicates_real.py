"""The real-data evaluation script (benchmarks/duplicates_real.py) on a corpus written here in
the two repositories' layouts: extraction keeps only the selected repositories, without
reading the others' records, and the figures count what they say."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "duplicates_real.py"


def _module():
    spec = importlib.util.spec_from_file_location("duplicates_real", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


def _record(a: tuple[str, str], b: tuple[str, str]) -> dict:
    return {"A_title": a[0], "A_body": a[1], "B_title": b[0], "B_body": b[1], "pattern": 1}


# Modelled on what the corpus holds: Trac tickets named two ways, tracker links, PR templates.
DJANGO = [
    (
        "django/django 5530 5512",
        _record(
            ("[WIP] Fixed #31207 -- Kept the state when squashing a migration", "See ticket."),
            ("Faster squashed migrations", "https://code.djangoproject.com/ticket/31207"),
        ),
    ),
    (
        "django/django 5601 5590",
        _record(
            ("Fixed #31300, #31302 -- Passed the router to check_constraints", ""),
            ("31302: router docs", "https://code.djangoproject.com/ticket/31302#comment:2"),
        ),
    ),
]
FIRST = [
    (
        "rails/rails 25276 25054",
        _record(
            ("Remove deprecated quoting of columns in the sqlite3 adapter", "Cleans it up."),
            ("Stop passing column to quote in the sqlite3 adapter", "Deprecated upstream."),
        ),
    ),
    ("held/out 12 10", "never read: a held-out repository's record"),
    (
        "rails/rails 9120 9001",
        _record(
            ("Fix typo in the routing guide", "Fixes a typo."),
            ("Typo in the routing guide: recieve", "recieve -> receive"),
        ),
    ),
]


def _corpus(make_repo) -> tuple[Path, Path]:
    dup_hunter, intrude = make_repo("Dup-Hunter"), make_repo("INTRUDE")
    dup_hunter.commit(
        {
            "django-3000/dup_django.txt": "\r\n".join(line for line, _ in DJANGO),
            "django-3000/dup_django_pull_info_X.txt": json.dumps([r for _, r in DJANGO]),
            "django-3000/dup_django_pull_info_y.txt": "[1, 1]",
            "held-3000/dup_held.txt": "held/out 7 5",
            "held-3000/dup_held_pull_info_X.txt": "not JSON: never read",
            "data/clf/first_msr_pairs_pull_info_X.txt": json.dumps([r for _, r in FIRST]),
        }
    )
    intrude.commit({"data/clf/first_msr_pairs.txt": "\n".join(line for line, _ in FIRST)})
    return dup_hunter.path / ".git", intrude.path / ".git"


def test_extract_keeps_the_selected_repositories_only(make_repo, tmp_path) -> None:
    module = _module()
    dup_hunter, intrude = _corpus(make_repo)
    texts, pairs = module.extract(dup_hunter, intrude, frozenset(module.DEVELOPMENT_REPOS))
    assert {repo for repo, _ in texts} == {"django/django", "rails/rails"}
    assert ("django/django", 5530, 5512) in pairs and len(pairs) == 4
    assert texts["rails/rails", 9001]["title"] == "Typo in the routing guide: recieve"
    module.write_data(tmp_path / "data", texts, pairs)
    loaded = module.load(tmp_path / "data", frozenset({"django/django"}))
    assert list(loaded) == ["django/django"]
    assert loaded["django/django"].earlier_duplicates()[5530] == {5512}
    with pytest.raises(SystemExit, match="how to get it"):
        module.load(tmp_path / "nowhere", frozenset(module.DEVELOPMENT_REPOS))


def test_the_command_line_extracts_then_reports(make_repo, tmp_path) -> None:
    dup_hunter, intrude = _corpus(make_repo)
    data = tmp_path / "data"
    run = [sys.executable, str(SCRIPT)]
    subprocess.run(
        [*run, "extract", "--dup-hunter", str(dup_hunter), "--intrude", str(intrude)]
        + ["--out", str(data)],
        check=True,
        capture_output=True,
    )
    assert "held/out" not in (data / "prs.jsonl").read_text()
    done = subprocess.run([*run, "run", str(data), "--json"], check=True, capture_output=True)
    result = json.loads(done.stdout)
    overall = result["overall"]["prbot"]
    assert overall["queries_with_duplicates"] == 4 and overall["queries_without"] == 4
    # The two Django pairs are found through their tickets, named two ways.
    assert result["django/django"]["prbot"]["recall"]["@1"] == 1.0
    assert set(result) == {"django/django", "rails/rails", "overall"}
    # The alerts to judge by hand: the text without the labels, the labels apart.
    judge = tmp_path / "judge"
    done = subprocess.run(
        [*run, "sample-alerts", str(data), "--out", str(judge)], check=True, capture_output=True
    )
    assert done.stdout.startswith(b"2 alerts, 2 sampled")
    blind = json.loads((judge / "alerts_blind.json").read_text())
    key = json.loads((judge / "alerts_key.json").read_text())
    assert [str(item["id"]) for item in blind] == list(key)
    # Only the texts: no label, and no PR numbers (the key's) to look a label up by.
    fields = {"id", "repo", "query_title", "query_body", "candidate_title", "candidate_body"}
    assert all(set(item) == fields for item in blind)
    text = (judge / "alerts_blind.json").read_text()
    assert not any(label in text for label in ('"right"', "wrong_candidate", "false_alert"))
    assert {label for *_, label in key.values()} <= {"right", "wrong_candidate", "false_alert"}
    assert {repo for repo, *_ in key.values()} <= {"django/django", "rails/rails"}


def test_figures_count_alerts_right_and_false() -> None:
    module = _module()
    truth = {10: set(), 11: {10}, 12: set(), 13: {12}}
    outcome = module.Outcome(
        rankings={10: [], 11: [10], 12: [11, 10], 13: [11, 12]},
        alerts={10: None, 11: 10, 12: 11, 13: 11},
        seconds=[0.001] * 4,
    )
    figures = module.Figures.of(outcome, truth)
    assert figures.recall(1) == 0.5 and figures.recall(5) == 1.0
    assert figures.flagged == 3 and figures.flagged_right == 1
    assert figures.false_alert_rate == 0.5  # 12 has no earlier duplicate and is flagged


def test_the_alert_curve_and_the_threshold_chosen_on_the_other_repositories() -> None:
    module = _module()
    truth = {10: set(), 11: {10}, 12: set(), 13: {12}}
    outcome = module.Outcome(
        scored={
            10: [],
            11: [(0.9, True, 10)],
            12: [(0.55, True, 10)],  # no earlier duplicate: a false alert at 0.55 and below
            13: [(0.7, False, 11), (0.5, True, 12)],  # 11 may not alert; 12 is right at 0.5
        }
    )
    curve = module.Curve.of(outcome, truth, (0.5, 0.6))
    assert curve.row(0.5) == {
        "threshold": 0.5,
        "flagged": 3,
        "right": 2,
        "flagged_share": 1.0,
        "precision": 0.667,
        "false_alert_rate": 0.5,
    }
    assert curve.points[0.6] == [1, 1, 0] and curve.best() == 0.6
    clean = module.Curve.of(module.Outcome(scored={11: [(0.9, True, 10)]}), {11: {10}}, (0.5, 0.6))
    loro = module.leave_one_repo_out({"a": curve, "b": clean})
    # a is judged at b's choice (0.5: b flags right there), b at a's (0.6).
    assert loro["thresholds"] == {"a": 0.5, "b": 0.6}
    assert (loro["flagged"], loro["right"]) == (4, 3)


def _leaders(strong: int, weak: int, negatives: int):
    """Synthetic top-two candidates: duplicates that lead their runner-up by far (``strong``)
    or barely (``weak``), and PRs without one whose top candidate barely leads."""
    alike = {"text": 0.6, "title": 0.5, "shared_words": 3.0, "closeness": 0.9}
    leaders, truth = {}, {}
    for i in range(strong + weak + negatives):
        query = 1000 + i
        raw = 0.8 if i < strong else 0.3
        leaders[query] = [(raw, dict(alike), i), (0.28, dict(alike), -1)]
        truth[query] = {i} if i < strong + weak else set()
    return leaders, truth


def test_the_alert_model_is_fitted_monotone_and_judged_on_the_other_repositories() -> None:
    _module()  # benchmarks/ on the path
    import _duppr_alert as alert

    found = alert.examples(*_leaders(strong=30, weak=10, negatives=20))
    assert len(found.rows) == 60 and (found.positives, found.negatives) == (40, 20)
    weights = alert.fit([found])
    assert all(weights[name] >= 0 for name in weights if name != "intercept")
    assert weights["lead"] > 0  # the lead is what tells these apart
    strong, weak = alert.chances(found, weights)[0], alert.chances(found, weights)[-1]
    assert strong > weak
    flagged, right, false = alert.counts(found, weights, 0.5)
    assert (flagged, right, false) == (30, 30, 0)  # the strong leads only
    # A vetoed top candidate (a revert) is no example at all.
    leaders, truth = _leaders(strong=1, weak=0, negatives=0)
    leaders[1000][0][1]["revert_pair"] = 1.0
    assert alert.examples(leaders, truth).rows == []
    # Each repository is judged by the fit on the others: "b" has nothing to fit on, so "a",
    # judged by b's flat model, flags nothing, though a's own fit flags its strong leads.
    empty = alert.examples({}, {})
    held = alert.held_out({"a": found, "b": empty}, {"a": [found], "b": [empty]}, 0.5)
    assert held["fixed"]["flagged"] == 0 and held["fixed"]["flagged_share"] == 0.0
    # ... and a threshold is chosen only where the other repositories can meet the targets.
    assert held["thresholds"]["a"] is None and held["thresholds"]["b"] is not None


def test_lines_that_are_not_records_are_skipped_and_counted(tmp_path, capsys) -> None:
    module = _module()
    data = tmp_path / "data"
    data.mkdir()
    good = {"repo": "rails/rails", "number": 2, "title": "Fix typo", "body": "x"}
    (data / "prs.jsonl").write_bytes(
        b"{not json\n"
        + json.dumps(good).encode()
        + b"\n"
        + json.dumps({"repo": "rails/rails", "number": "two"}).encode()
        + b"\n\xff\xfe binary\n"
        + json.dumps({**good, "number": 1}).encode()
        + b"\n"
    )
    (data / "pairs.jsonl").write_text(
        json.dumps({"repo": "rails/rails", "pair": [2, 1]}) + "\n[1, 2]\n"
    )
    loaded = module.load(data, frozenset({"rails/rails"}))
    assert sorted(loaded["rails/rails"].prs) == [1, 2]
    assert loaded["rails/rails"].pairs == [(2, 1)]
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{data / 'prs.jsonl'}: 3 line(s) skipped, not a record (first: line 1)",
        f"{data / 'pairs.jsonl'}: 1 line(s) skipped, not a record (first: line 2)",
    ]
