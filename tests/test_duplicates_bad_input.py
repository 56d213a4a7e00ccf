"""Bad input to the duplicate audit: empty, huge, foreign, binary-looking and many. Each gives
a clean result or a named problem, and the work per query is bounded (counted, not timed)."""

from __future__ import annotations

import base64
import json
import random
from collections import Counter
from datetime import UTC, datetime

import pytest
from duplicates_helpers import write_export

from bot.cli import main
from bot.duplicates.export import load_export
from bot.duplicates.features import PRFeatures, build_features, features_from_record
from bot.duplicates.index import NEAREST_FILL, SCORED_PER_QUERY, MemoryIndex
from bot.duplicates.records import MAX_BODY_CHARS, record_from_dict
from bot.duplicates.scoring import LIKELY_DUPLICATE, ScoringConfig
from bot.duplicates.template import MAX_LINES

CONFIG = ScoringConfig(min_score=0.0)
WHEN = datetime(2025, 3, 1, tzinfo=UTC)


def _pr(number: int, title: str, body: str = "", author: str = "") -> PRFeatures:
    return build_features(
        number, title=title, body=body, author=author or f"u{number}", created_at=WHEN
    )


def test_empty_titles_and_bodies_rank_without_claims() -> None:
    index = MemoryIndex([_pr(1, ""), _pr(2, "", ""), _pr(3, "Fix the loader crash", "")])
    for query in (_pr(4, ""), _pr(5, "Fix the loader crash")):
        result = index.query(query, CONFIG, top=10)
        for candidate in result.candidates:
            evidence = [str(e) for e in candidate.evidence]
            if query.number == 4:
                # Nothing to compare: no tier above overlap, no wording cited.
                assert candidate.tier != LIKELY_DUPLICATE
                assert not any(e.startswith("similar title") for e in evidence)
    assert index.query(_pr(5, "Fix the loader crash"), CONFIG).candidates[0].number == 3


def test_empty_records_through_the_cli(tmp_path, capsys) -> None:
    export = write_export(
        tmp_path / "prs.jsonl",
        [{"number": 1}, {"number": 2, "title": "", "body": ""}, {"number": 3, "title": None}],
    )
    assert main(["duplicates", "--prs", str(export), "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["number"] for r in results] == [1, 2, 3]
    assert all(c["tier"] != LIKELY_DUPLICATE for r in results for c in r["candidates"])


def test_a_one_megabyte_body_is_trimmed_and_named(tmp_path) -> None:
    body = "Traceback line with a frame in the scheduler\n" * 23_000  # just over 1 MB
    assert len(body) > 1_000_000
    problems = []
    export = write_export(
        tmp_path / "prs.jsonl",
        [
            {"number": 1, "title": "Scheduler crash on long prompts", "body": body},
            {"number": 2, "title": "Fix scheduler crash with long prompts", "body": "short"},
        ],
    )
    records = load_export(export, problems.append)
    assert len(records) == 2 and len(records[0].body) == MAX_BODY_CHARS
    assert [str(p) for p in problems] == [
        f"prs.jsonl:1 (#1): body has {len(body):,} characters; "
        f"only the first {MAX_BODY_CHARS:,} used"
    ]
    # A caller that builds features from a raw body (no record) is bounded too.
    raw = build_features(
        1,
        title="Scheduler crash",
        body=body + "".join(f"distinct line {i}\n" for i in range(5_000)),
    )
    assert len(raw.lines) <= MAX_LINES
    index = MemoryIndex([features_from_record(r) for r in records[:1]])
    (top,) = index.query(features_from_record(records[1]), CONFIG).candidates
    assert top.number == 1


def test_fifty_thousand_open_prs_score_a_bounded_few() -> None:
    rng = random.Random(25)
    vocabulary = [f"w{i}" for i in range(6_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocabulary))]  # Zipf: a few everyday words

    def features(number: int, words: list[str]) -> PRFeatures:
        terms = Counter(words)
        return PRFeatures(
            number,
            title=" ".join(words[:6]),
            terms=terms,
            title_terms=Counter(words[:6]),
            created_at=WHEN,
        )

    index = MemoryIndex()
    for number in range(1, 50_001):
        index.add(features(number, rng.choices(vocabulary, weights, k=12)))
    planted = ["kvcache", "eviction", "deadlock", "scheduler", "preempt", "w1", "w2"]
    index.add(features(50_001, planted + ["w3"]))
    assert len(index) == 50_001

    result = index.query(features(50_002, planted + ["w4"]), CONFIG, top=10)
    assert result.searched == 50_001
    assert 0 < result.scored <= SCORED_PER_QUERY + NEAREST_FILL
    assert result.candidates[0].number == 50_001
    # Nothing in common with any PR: the nearest few fill in, still bounded.
    lonely = index.query(features(50_003, ["zzz", "qqq"]), CONFIG, top=10)
    assert lonely.scored <= SCORED_PER_QUERY + NEAREST_FILL


@pytest.mark.parametrize(
    ("duplicate", "query", "other"),
    [
        (
            ("Исправить утечку памяти в планировщике", "Утечка памяти при долгих запросах"),
            ("Утечка памяти в планировщике", "Планировщик теряет память"),
            ("Добавить документацию по установке", "Новая страница"),
        ),
        (
            ("修复调度器内存泄漏", "长请求时调度器内存泄漏"),
            ("调度器内存泄漏修复", "内存泄漏"),
            ("添加安装文档", "新页面"),
        ),
    ],
    ids=["russian", "chinese"],
)
def test_text_in_other_scripts_is_compared(duplicate, query, other) -> None:
    # The duplicate has the lowest number: with no words compared, ties would put it last.
    index = MemoryIndex([_pr(1, *duplicate), _pr(2, *other), _pr(3, *other)])
    top = index.query(_pr(4, *query), CONFIG).candidates[0]
    assert top.number == 1
    assert any(str(e).startswith("similar title and description") for e in top.evidence)


def test_emoji_and_binary_looking_bodies_are_clean() -> None:
    blob = base64.b64encode(random.Random(1).randbytes(30_000)).decode()
    noise = bytes(random.Random(2).randbytes(4_000)).decode("utf-8", "replace")
    record = record_from_dict({"number": 7, "title": "🚀🔥 \x00\x07", "body": "\x00" * 50 + noise})
    index = MemoryIndex(
        [
            _pr(1, "🚀🚀🚀", "🎉" * 500),
            _pr(2, "Update model weights", blob),
            features_from_record(record),
        ]
    )
    for query in (_pr(3, "🚀", "😀"), _pr(4, "Update weights", blob[:10_000])):
        result = index.query(query, CONFIG)
        assert all(0.0 <= c.score <= 1.0 for c in result.candidates)
    # A pasted blob is not a wall of distinct words: its terms are bounded.
    assert len(_pr(5, "", blob).terms) < 200


TEMPLATE = """## Motivation
Describe why this change is needed and what problem it solves for users.
## Verification steps
- Ran the integration suite against the staging cluster
- Attached the benchmark numbers before and after
## Release notes
Does this change need a release note entry for operators upgrading?
"""


def test_the_repositorys_pr_template_is_never_evidence() -> None:
    # Nine PRs of forty keep the template (a repository's, not vLLM's): too few for each of
    # its words to be common, enough for its lines to be the template.
    topics = ["parser", "router", "cache", "logger", "metrics", "auth", "storage", "queue"]
    templated = [
        _pr(10 + i, f"Rework the {t} module", f"{TEMPLATE}\nThe {t} module is slow.")
        for i, t in enumerate(topics)
    ]
    others = [
        _pr(100 + i, f"Tidy {t} names", f"Small {t} rename.")
        for i, t in enumerate([f"area{i}" for i in range(31)])
    ]
    index = MemoryIndex([*templated, *others])
    query = _pr(200, "Speed up the tokenizer warmup", f"{TEMPLATE}\nWarmup took 3 s.")
    result = index.query(query, CONFIG, top=50)
    for candidate in result.candidates:
        evidence = [str(e) for e in candidate.evidence]
        assert not any(e.startswith("similar title and description") for e in evidence), (
            candidate.number,
            evidence,
        )
        assert candidate.tier != LIKELY_DUPLICATE
    # What the two PRs wrote themselves still counts.
    twin = _pr(300, "Tokenizer warmup is slow", f"{TEMPLATE}\nThe tokenizer warmup took 3 s.")
    index.add(twin)
    top = index.query(query, CONFIG).candidates[0]
    assert top.number == 300
    assert any(str(e).startswith("similar title and description") for e in top.evidence)
