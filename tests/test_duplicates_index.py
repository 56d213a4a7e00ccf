"""Index and scoring: candidates from inverted indexes, tiers, exclusions, quality targets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.duplicates.embeddings import pack
from bot.duplicates.features import build_features
from bot.duplicates.index import CLOSED_KEEP, NEAREST_FILL, SCORED_PER_QUERY, MemoryIndex
from bot.duplicates.records import FileChange
from bot.duplicates.scoring import (
    LIKELY_DUPLICATE,
    OVERLAP,
    TEXT_ONLY_ALERT_CHANCE,
    TEXT_ONLY_OVERLAP_CAP,
    PreparedQuery,
    ScoringConfig,
    alert_chance,
    may_alert,
    same_goal,
)

REGISTRY = "vllm/v1/attention/backends/registry.py"


def _patch(line: int, *added: str) -> str:
    return f"@@ -{line},3 +{line},{3 + len(added)} @@\n ctx\n" + "".join(f"+{a}\n" for a in added)


def _pr(number: int, title: str, body: str = "", author: str = "", files=None, **kw):
    return build_features(
        number, title=title, body=body, author=author or f"dev{number}", files=files, **kw
    )


def _backend_pr(number: int, title: str, member: str, author: str = "") -> object:
    return _pr(
        number,
        title,
        author=author,
        files=[
            FileChange(REGISTRY, 1, 0, _patch(58, f'    {member} = "vllm.x.{member.lower()}"')),
            FileChange(
                f"vllm/v1/attention/backends/mla/{member.lower()}.py",
                5,
                0,
                _patch(1, f"class {member.title().replace('_', '')}Backend(Base):"),
            ),
        ],
    )


def test_same_new_identifier_is_a_likely_duplicate_with_concrete_evidence() -> None:
    index = MemoryIndex(
        [
            _backend_pr(1, "Add TokenSpeed MLA backend", "TOKENSPEED_MLA"),
            _backend_pr(2, "Integrate tokenspeed kernels for DeepSeek", "TOKENSPEED_MLA"),
            _backend_pr(3, "Add FlashInfer sparse MLA backend", "FLASHINFER_MLA_SPARSE"),
        ]
    )
    result = index.query(index.get(1), ScoringConfig())
    by_number = {c.number: c for c in result.candidates}
    assert by_number[2].tier == LIKELY_DUPLICATE
    assert f"both add `TOKENSPEED_MLA` to `{REGISTRY}`" in [str(e) for e in by_number[2].evidence]
    # Same registry hunk but a different new name: overlapping work, not a duplicate.
    assert by_number[3].tier == OVERLAP
    assert 0 <= by_number[3].score < by_number[2].score <= 1
    assert result.candidates[0].number == 2


def test_shared_claimed_issue_and_file_counts() -> None:
    files = [FileChange(f"vllm/m{i}.py", 1, 0, _patch(10 * i, f"x{i} = {i}")) for i in range(5)]
    a = _pr(10, "Fix loader", "Fixes #1234", files=files)
    b = _pr(11, "Handle missing params", "Resolves #1234", files=files[:4])
    index = MemoryIndex([a, b])
    (candidate,) = index.query(a, ScoringConfig()).candidates
    evidence = [str(e) for e in candidate.evidence]
    assert evidence[0] == "both fix #1234"
    assert "4 of 5 changed files shared (4 in theirs)" in evidence
    assert candidate.tier == LIKELY_DUPLICATE and candidate.score > 0.8


def test_text_only_records_and_empty_bodies() -> None:
    index = MemoryIndex(
        [
            _pr(1, "gpt-oss: generation does not stop at the harmony return token"),
            _pr(2, "[Bugfix][gpt-oss] Add harmony stop tokens so generation stops"),
            _pr(3, "[Doc] Fix typo in the quickstart"),
            _pr(4, ""),
        ]
    )
    result = index.query(index.get(1), ScoringConfig(min_score=0.05))
    assert [c.number for c in result.candidates][:1] == [2]
    assert index.query(index.get(4), ScoringConfig(min_score=0.05)).candidates == []


def test_same_author_is_stacked_bots_and_shared_commits_are_excluded() -> None:
    base = [FileChange("vllm/a.py", 1, 0, _patch(5, "def helper_for_stack():"))]
    index = MemoryIndex(
        [
            _pr(1, "Add helper for stacks (1/2)", author="kv", files=base),
            _pr(2, "Add helper for stacks (2/2)", author="kv", files=base),
            _pr(3, "Add helper for stacks", author="dependabot[bot]", files=base),
            _pr(4, "Add helper for stacks again", files=base, head_sha="abc"),
        ]
    )
    query = _pr(5, "Add helper for stacks", author="kv", files=base, head_sha="abc")
    result = index.query(query, ScoringConfig())
    assert result.stacked == [1, 2]
    assert result.shared_commits == [4]
    assert result.candidates == []
    bot = _pr(6, "Add helper for stacks", author="renovate[bot]", files=base)
    assert index.query(bot, ScoringConfig()).candidates == []


def test_hot_files_count_for_little() -> None:
    def pair(path: str) -> MemoryIndex:
        files = [FileChange(path, 1, 0, _patch(40, '    "Thing",'))]
        return MemoryIndex(
            [_pr(1, "Export engine", files=files), _pr(2, "Tidy imports", files=files)]
        )

    # The same one-line change in an ordinary file makes the other PR a candidate ...
    cold = pair("vllm/engine/arg_utils.py")
    [candidate] = cold.query(cold.get(1), ScoringConfig()).candidates
    assert candidate.number == 2
    # ... and in a hot file (one most PRs touch) it does not.
    hot = pair("vllm/__init__.py")
    assert ScoringConfig().is_hot("vllm/__init__.py")
    assert hot.query(hot.get(1), ScoringConfig()).candidates == []


def test_updates_are_incremental() -> None:
    index = MemoryIndex([_backend_pr(1, "a", "TOKENSPEED_MLA"), _backend_pr(2, "b", "OTHER_X")])
    assert index.identifier_df("TOKENSPEED_MLA") == 1
    index.add(_backend_pr(2, "b", "TOKENSPEED_MLA"))  # a new head replaces the old one
    assert index.identifier_df("TOKENSPEED_MLA") == 2 and index.identifier_df("OTHER_X") == 0
    index.remove(1)
    assert len(index) == 1 and index.identifier_df("TOKENSPEED_MLA") == 1


def test_different_fixes_in_the_same_lines_are_overlap_not_duplicates() -> None:
    path = "vllm/v1/core/sched/scheduler.py"
    fix_one = _patch(700, "if req.blocks_freed:", "    return", "self.kv_manager.free_once(req)")
    fix_two = _patch(701, "self.waiting.remove_finished(done_ids)", "log_abort(done_ids)")
    first = _pr(
        1,
        "[Bugfix] Fix scheduler crash when preempting requests",
        "Preemption freed blocks twice under memory pressure.",
        files=[FileChange(path, 3, 0, fix_one)],
    )
    second = _pr(
        2,
        "[Bugfix] Fix scheduler crash when requests finish early",
        "Finished requests stayed in the waiting queue after abort.",
        files=[FileChange(path, 2, 0, fix_two)],
    )
    index = MemoryIndex([first, second])
    (candidate,) = index.query(first, ScoringConfig()).candidates
    assert candidate.tier == OVERLAP
    assert any(str(e).startswith("overlapping edits in") for e in candidate.evidence)


def _flag_pr(number: int, title: str, path: str, line: str) -> object:
    body = "Let users switch it off without removing the whole config."
    return _pr(number, title, body, files=[FileChange(path, 1, 0, _patch(20, line))])


def test_the_same_kind_of_change_to_different_files_is_not_a_duplicate() -> None:
    # Two config classes each gain an `enabled` field, worded alike: two changes, not one twice.
    index = MemoryIndex(
        [
            _flag_pr(
                1,
                "Add enabled flag to the KV events config",
                "vllm/config/kv_events.py",
                "    enabled: bool = False",
            ),
            _flag_pr(
                2,
                "Add enabled flag to the tracing config",
                "vllm/config/tracing.py",
                "    enabled: bool = False",
            ),
        ]
    )
    assert [c.tier for c in index.query(index.get(1), ScoringConfig(min_score=0)).candidates] == [
        OVERLAP
    ]
    # A specific new name is still evidence of the same goal, whichever files add it.
    index = MemoryIndex(
        [
            _flag_pr(
                3,
                "Add KV cache size in bytes",
                "vllm/config/cache.py",
                "    kv_cache_memory_bytes: int | None = None",
            ),
            _flag_pr(
                4,
                "Explicit KV cache size option",
                "vllm/engine/arg_utils.py",
                "    kv_cache_memory_bytes: int | None = None",
            ),
        ]
    )
    assert index.query(index.get(3), ScoringConfig()).candidates[0].tier == LIKELY_DUPLICATE


def test_one_claims_the_issue_the_other_points_at_it_in_the_same_lines() -> None:
    path = "vllm/model_executor/models/phi4mm.py"
    fix_a = _patch(733, "        if audio_features.numel() == 0:", "            return []")
    fix_b = _patch(735, "        if len(audio_embeds) == 0:", "            return None")
    index = MemoryIndex(
        [
            _pr(
                1,
                "Phi-4-multimodal crashes on empty audio",
                "Fixes #40555",
                files=[FileChange(path, 2, 0, fix_a)],
            ),
            _pr(2, "phi4mm: skip empty clips", "see #40555", files=[FileChange(path, 2, 0, fix_b)]),
        ]
    )
    signals = PreparedQuery(index.get(1), index, ScoringConfig()).score(index.get(2)).signals
    assert signals["claim_mentioned"] == 1.0 and signals["hunks"] == 1.0
    # Little shared wording, different added code: the issue and the lines decide.
    signals |= {"text": 0.1, "code_text": 0.0, "code_disagrees": 1.0}
    assert same_goal(signals)
    # Pointing at the same issue while editing other lines is not the same fix.
    assert not same_goal(signals | {"hunks": 0.0})


# Text-only records as the DupPR corpus has them (number, title, body), in an index with enough
# unrelated PRs for document frequencies to mean something.
FILLER_TOPICS = [
    "routing cache", "session cookie", "mailer preview", "asset pipeline", "json encoder",
    "migration rollback", "eager loading", "locale fallback", "cable adapter", "job retries",
    "form helpers", "template digest", "query logs", "schema dump", "time zones",
    "secure tokens", "store cleanup", "view paths", "parameter wrapping", "engine mounts",
    "fixture sets", "counter cache", "enum scopes", "strict loading", "inflector rules",
]  # fmt: skip


def _text_index(*prs) -> MemoryIndex:
    filler = [
        _pr(100 + i, f"Improve {topic} handling", f"The {topic} code needed {topic} work.")
        for i, topic in enumerate(FILLER_TOPICS)
    ]
    return MemoryIndex([*filler, *prs])


def _tier_of(index: MemoryIndex, query, number: int) -> str | None:
    result = index.query(query, ScoringConfig(min_score=0.0), top=50)
    return next((c.tier for c in result.candidates if c.number == number), None)


def test_short_generic_texts_are_not_called_duplicates() -> None:
    # As in a real repository, where typo fixes come every week.
    typos = [_pr(50 + i, f"Fix typo in the {t} guide") for i, t in enumerate(FILLER_TOPICS[:6])]
    index = _text_index(_pr(1, "Fix typo", "Fixes a typo."), *typos)
    assert _tier_of(index, _pr(200, "Fixed typo", "typo"), 1) == OVERLAP
    # Opened next to each other: the text-only alert also weighs time apart (nearer than the
    # runner-up counts for it), and here only the wording is under test.
    specific = _text_index(
        _pr(199, "Keep autocomplete suggestions as objects in the suggestion cache", "Not strings.")
    )
    query = _pr(200, "Autocomplete suggestion cache keeps objects", "Suggestions stay objects.")
    assert _tier_of(specific, query, 199) == LIKELY_DUPLICATE


def test_distinct_tickets_keep_alike_titles_apart() -> None:
    # Backports of one fix to two branches, or two steps of one feature: each names its own bug.
    index = _text_index(_pr(1, "Bug 702411 - Remember the chosen dialer ringtone"))
    other_bug = _pr(200, "Bug 702410 - Remember the chosen dialer ringtone")
    same_bug = _pr(201, "Bug 702411 - Remember the chosen dialer ringtone")
    assert _tier_of(index, other_bug, 1) == OVERLAP
    assert _tier_of(index, same_bug, 1) == LIKELY_DUPLICATE


def test_naming_the_other_pr_needs_alike_wording_to_be_the_same_goal() -> None:
    index = _text_index(
        _pr(1, "Replace the Makefile with a task runner", "Make is hard to extend.")
    )
    follow_up = _pr(200, "Make the build pleasant to use", "Following #1 I reworked the docs task.")
    redo = _pr(
        201, "Replace the Makefile with a task runner (rebased)", "Reopening #1: make is hard."
    )
    assert _tier_of(index, follow_up, 1) == OVERLAP
    assert _tier_of(index, redo, 1) == LIKELY_DUPLICATE


def test_an_issue_many_prs_name_is_weak_evidence() -> None:
    # A PR template's "Fixes #1234" example left in every body.
    template = "Fixes #1234 (example)."
    index = _text_index(*[_pr(n, f"Change {n}", template) for n in range(1, 8)])
    signals = (
        PreparedQuery(_pr(200, "Another", template), index, ScoringConfig())
        .score(index.get(1))
        .signals
    )
    assert 0 < signals["claimed_issue"] < 0.5
    assert _tier_of(index, _pr(201, "Another", template), 1) == OVERLAP


def test_without_dates_the_nearer_pr_number_ranks_first() -> None:
    index = _text_index(
        _pr(10, "Raise on a missing cable adapter", ""),
        _pr(190, "Raise on a missing cable adapter", ""),
    )
    query = _pr(200, "Raise on missing cable adapters", "")
    ranked = [c.number for c in index.query(query, ScoringConfig(), top=2).candidates]
    assert ranked == [190, 10]
    off = index.query(query, ScoringConfig(number_clock=False), top=2).candidates
    assert off[0].score == off[1].score


def test_words_in_most_prs_are_boilerplate() -> None:
    table = "| Q | A |\n| Bug fix? | yes |\n| BC breaks? | no |\n| Deprecations? | no |"
    index = MemoryIndex(
        [_pr(n, f"[Component{n}] change {topic}", table) for n, topic in enumerate(FILLER_TOPICS)]
    )
    # (Title tags are words: "[Console]" shares none with the fillers' topics.)
    query = _pr(200, "[Console] remove deprecated listeners", table)
    result = index.query(query, ScoringConfig(min_score=0.0), top=5)
    assert all(c.signals["text"] < 0.2 for c in result.candidates)


def test_a_small_index_is_scored_whole() -> None:
    # No rare word in common, yet scored: a small index loses no candidate to generation.
    index = _text_index(_pr(1, "Improve routing", "routing"))
    numbers = index.candidate_numbers(_pr(200, "Nothing alike at all", ""), ScoringConfig())
    assert set(numbers) == set(index.docs)


def test_the_same_new_names_outweigh_each_naming_its_own_issue() -> None:
    # An issue filed twice, each fixed by its own PR: the code says they are the same work.
    a = _backend_pr(1, "Add TokenSpeed MLA backend", "TOKENSPEED_MLA")
    b = _backend_pr(2, "TokenSpeed MLA attention", "TOKENSPEED_MLA")
    a.claimed, b.claimed = {31877}, {31900}
    index = MemoryIndex([a])
    [candidate] = index.query(b, ScoringConfig(), top=1).candidates
    assert candidate.signals["distinct_references"] == 1.0
    assert candidate.tier == LIKELY_DUPLICATE


def _word(n: int) -> str:
    # A made-up word per PR ("qaab", "qaac", ...): no two filler PRs share one.
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "q" + letters[n // 676 % 26] + letters[n // 26 % 26] + letters[n % 26]


def test_a_text_sharing_no_rare_word_still_meets_the_prs_opened_nearest() -> None:
    # "Fix x.py" (rust-lang/rust#42089) shares no rare word with the PR it duplicates; in an
    # index too big to score whole, the PRs opened just before it are still scored.
    index = MemoryIndex(_pr(n, f"Tune {_word(n)}", f"{_word(n)} only") for n in range(1, 301))
    numbers = index.candidate_numbers(_pr(305, "Fix x.py", ""), ScoringConfig())
    assert len(index) > SCORED_PER_QUERY
    assert numbers == list(range(300, 300 - NEAREST_FILL, -1))


def test_the_nearest_fill_goes_by_dates_when_there_are_dates() -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    # Numbers and dates disagree: #2 was opened last.
    prs = [
        _pr(n, f"Tune {_word(n)}", "", created_at=start + timedelta(hours=n if n > 2 else 900))
        for n in range(1, 301)
    ]
    index = MemoryIndex(prs)
    query = _pr(305, "Fix x.py", "", created_at=start + timedelta(hours=901))
    assert index.candidate_numbers(query, ScoringConfig())[0] == 2


def test_the_sentence_embedding_ranks_the_pr_that_means_the_same() -> None:
    # Worded apart, alike in meaning: with embeddings (prbot[embeddings]) the closer meaning
    # ranks first; without them the two tie on the words they share.
    close, far = pack([0.8, 0.6, 0.0]), pack([0.0, 0.6, 0.8])
    query = _pr(200, "Stop the scheduler from hanging", "", embedding=pack([1.0, 0.0, 0.0]))
    index = _text_index(
        _pr(10, "Scheduler deadlock on preemption", "", embedding=far),
        _pr(11, "Scheduler deadlock on preemption", "", embedding=close),
    )
    config = ScoringConfig(min_score=0.0, number_clock=False)
    ranked = index.query(query, config, top=50).candidates
    order = [c.number for c in ranked]
    assert order[0] == 11 and order.index(11) < order.index(10)
    assert ranked[0].signals["semantic"] == pytest.approx(0.8, abs=0.01)
    plain = _pr(200, "Stop the scheduler from hanging", "")
    tied = index.query(plain, config, top=2).candidates
    assert tied[0].score == tied[1].score and "semantic" not in tied[0].signals


def _evidence(candidate) -> list[str]:
    return [str(e) for e in candidate.evidence]


def test_two_prs_creating_the_same_file_say_so_not_lines_0_to_0() -> None:
    new_file = "@@ -0,0 +1,3 @@\n+import torch\n+\n+def tokenspeed_decode(q):\n"
    path = "vllm/v1/attention/backends/tokenspeed.py"
    a = _pr(1, "TokenSpeed decode kernel", files=[FileChange(path, 3, 0, new_file)])
    b = _pr(2, "Add TokenSpeed decode", files=[FileChange(path, 3, 0, new_file)])
    [candidate] = MemoryIndex([a]).query(b, ScoringConfig(min_score=0.0), top=1).candidates
    evidence = _evidence(candidate)
    assert f"both create `{path}`" in evidence
    assert not any("lines 0" in e or "line 0" in e for e in evidence)


def test_the_same_edited_function_is_named() -> None:
    selector = "vllm/attention/selector.py"

    def edit(line: int, added: str) -> str:
        return f"@@ -{line},3 +{line},4 @@ def get_attn_backend(head_size: int):\n ctx\n+{added}\n"

    a = _pr(1, "Pick TokenSpeed on Blackwell", files=[FileChange(selector, 1, 0, edit(40, "a"))])
    b = _pr(2, "Select the TokenSpeed backend", files=[FileChange(selector, 1, 0, edit(90, "b"))])
    [candidate] = MemoryIndex([a]).query(b, ScoringConfig(min_score=0.0), top=1).candidates
    assert f"both change `get_attn_backend` in `{selector}`" in _evidence(candidate)


def test_members_every_sibling_backend_defines_are_not_cited() -> None:
    # Two different backends, each in its own file, each defining the members every backend
    # has: that they share `get_name` says nothing about the two.
    def backend(number: int, name: str):
        body = (
            f"class {name}Backend(AttentionBackend):\n    def get_name():\n    def get_impl_cls():"
        )
        patch = "@@ -0,0 +1,3 @@\n" + "".join(f"+{line}\n" for line in body.splitlines())
        path = f"vllm/v1/attention/backends/{name.lower()}.py"
        return _pr(
            number, f"Add the {name} attention backend", files=[FileChange(path, 3, 0, patch)]
        )

    index = MemoryIndex([backend(1, "Triton")])
    [candidate] = index.query(backend(2, "Tokenspeed"), ScoringConfig(min_score=0.0)).candidates
    assert not any("get_name" in e or "get_impl_cls" in e for e in _evidence(candidate))


def test_a_tracking_issue_many_prs_mention_is_not_cited() -> None:
    prs = [_pr(n, f"Topic {_word(n)} step", "Part of #500") for n in range(1, 8)]
    index = MemoryIndex(prs)
    result = index.query(_pr(20, "Topic step", "Part of #500"), ScoringConfig(min_score=0.0))
    assert result.candidates
    assert not any("#500" in e for c in result.candidates for e in _evidence(c))
    pair = MemoryIndex([_pr(1, "Fix the loader", "See #77")])
    [candidate] = pair.query(
        _pr(2, "Loader fix", "See #77"), ScoringConfig(min_score=0.0)
    ).candidates
    assert "both mention #77" in _evidence(candidate)


def test_a_merged_pr_that_did_the_same_work_is_listed_in_its_own_tier() -> None:
    merged = _backend_pr(1, "Add TokenSpeed MLA backend", "TOKENSPEED_MLA")
    merged.state = "merged"
    index = MemoryIndex(
        [_backend_pr(3, "Add FlashInfer sparse MLA backend", "FLASHINFER_MLA_SPARSE")], [merged]
    )
    result = index.query(
        _backend_pr(5, "TokenSpeed MLA attention", "TOKENSPEED_MLA"), ScoringConfig()
    )
    assert [c.number for c in result.closed] == [1]
    assert result.closed[0].state == "merged" and result.closed[0].to_json()["state"] == "merged"
    assert 1 not in [c.number for c in result.candidates]
    # Reopened: back among the open PRs, out of the closed tier.
    index.add(_backend_pr(1, "Add TokenSpeed MLA backend", "TOKENSPEED_MLA"))
    again = index.query(
        _backend_pr(5, "TokenSpeed MLA attention", "TOKENSPEED_MLA"), ScoringConfig()
    )
    assert again.closed == [] and again.candidates[0].number == 1


def test_the_closed_tier_is_bounded_and_recent() -> None:
    index = MemoryIndex()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for n in range(1, CLOSED_KEEP + 11):
        pr = _pr(n, f"Tune {_word(n)}", "")
        pr.closed_at = start + timedelta(hours=n)
        index.add_closed(pr)
    assert index.recently_closed is not None and len(index.recently_closed) == CLOSED_KEEP
    assert min(index.recently_closed.docs) == 11  # the longest closed left first
    old = _pr(1, "Raise on a missing cable adapter", "")
    old.closed_at = start + timedelta(days=30)  # the most recently closed: kept
    index.add_closed(old)
    late = _pr(900, "Raise on a missing cable adapter", "", created_at=start + timedelta(days=430))
    assert index.query(late, ScoringConfig()).closed == []  # closed too long before
    soon = _pr(901, "Raise on a missing cable adapter", "", created_at=start + timedelta(days=33))
    assert [c.number for c in index.query(soon, ScoringConfig()).closed] == [1]


def test_a_text_only_alert_weighs_the_lead_over_the_runner_up() -> None:
    # Two earlier PRs in much the same words as the query: wording alike to two PRs is
    # alike, not a copy of either, so neither is called a duplicate.
    twins = [
        _pr(1, "Fix crash when the config file is empty", "Guard the loader against it."),
        _pr(2, "Fix crash when config file is empty", "Guard the config loader against it."),
        _pr(3, "Add a progress bar to the downloader", "Shows bytes fetched so far."),
    ]
    query = _pr(4, "Fix crash on an empty config file", "Guarding the loader against it.")
    result = MemoryIndex(twins).query(query, ScoringConfig(min_score=0.05))
    top, runner_up = result.candidates[:2]
    assert {top.number, runner_up.number} == {1, 2}
    assert top.tier == runner_up.tier == OVERLAP
    assert top.signals["alert_chance"] < TEXT_ONLY_ALERT_CHANCE
    # With one of them gone the other stands clear of the rest, and is called one.
    alone = MemoryIndex([twins[0], twins[2]]).query(query, ScoringConfig(min_score=0.05))
    assert alone.candidates[0].number == 1 and alone.candidates[0].tier == LIKELY_DUPLICATE
    assert alone.candidates[0].signals["alert_chance"] >= TEXT_ONLY_ALERT_CHANCE
    # The bar is the rules' choice: at a stricter one the same pair is an overlap, listed
    # (its wording passes same_goal's bar, even at the report's floor) below any alert's score.
    strict = ScoringConfig(text_only_alert_chance=0.999)
    held = MemoryIndex([twins[0], twins[2]]).query(query, strict).candidates
    assert [c.number for c in held] == [1]
    assert held[0].tier == OVERLAP and held[0].score <= TEXT_ONLY_OVERLAP_CAP


def test_a_lower_candidate_meets_the_top_as_its_rival_and_an_alerts_score_reads_as_one() -> None:
    twins = [
        _pr(1, "Fix crash when the config file is empty", "Guard the loader against it."),
        _pr(2, "Fix crash when config file is empty", "Guard the config loader against it."),
    ]
    query = _pr(4, "Fix crash on an empty config file", "Guarding the loader against it.")
    anything = ScoringConfig(text_only_alert_chance=0.0, min_score=0.0)
    top, runner_up = MemoryIndex(twins).query(query, anything).candidates
    assert top.raw_score >= runner_up.raw_score
    # Each is judged against the best other candidate: the top against the runner-up, the
    # runner-up against the top (a negative lead, so a lower chance than the top's).
    near = (top.raw_score, top.signals["closeness"])
    assert runner_up.signals["alert_chance"] == alert_chance(
        runner_up.signals, runner_up.raw_score, *near
    )
    assert runner_up.signals["alert_chance"] < top.signals["alert_chance"]
    # A weakly alike alert (allowed by that bar) still scores above every overlap's cap.
    weak = [_pr(1, "Fix crash when the config file is empty", "Guard the loader against it.")]
    query = _pr(6, "Read the config file once at start", "Loader speed.")
    [alert] = MemoryIndex(weak).query(query, anything).candidates
    assert alert.tier == LIKELY_DUPLICATE and alert.raw_score < TEXT_ONLY_OVERLAP_CAP
    assert alert.score > TEXT_ONLY_OVERLAP_CAP


def test_a_same_author_pr_is_stacked_only_where_it_would_be_listed_as_a_rival() -> None:
    # The same author's PRs: one on the same goal as the query, one only alike in a few words
    # ("config file"). Wording alone over the alert model's floor (0.25) made the second a
    # provisional likely duplicate, and so "stacked"; judged like a rival it is not listed.
    index = MemoryIndex(
        [
            _pr(1, "Fix crash when the config file is empty", "Guard the loader.", author="kv"),
            _pr(5, "Config loader: read the file lazily", "Speeds up start.", author="kv"),
            _pr(3, "Add a progress bar to the downloader", "Shows bytes fetched so far."),
        ]
    )
    query = _pr(6, "Read the config file once at start", "Loader speed.", author="kv")
    prepared = PreparedQuery(query, index, ScoringConfig())
    alike = prepared.score(index.docs[1])
    assert alike.signals["text"] >= 0.25 and not same_goal(alike.signals)
    assert index.query(query, ScoringConfig()).stacked == [5]


def test_alert_chance_rises_with_the_lead_and_never_judges_vetoed_pairs() -> None:
    alike = {"text": 0.6, "title": 0.5, "shared_words": 3.0, "closeness": 0.9}
    chances = [alert_chance(alike, raw, 0.2, 0.9) for raw in (0.2, 0.3, 0.5, 0.8)]
    assert chances == sorted(chances) and chances[0] < chances[-1]
    # More shared wording, the same issue, nearer in time: never a lower chance.
    base = alert_chance(alike, 0.5, 0.2, 0.9)
    assert alert_chance(alike | {"shared_words": 6.0}, 0.5, 0.2, 0.9) > base
    assert alert_chance(alike | {"shared_mention": 1.0}, 0.5, 0.2, 0.9) > base
    assert alert_chance(alike, 0.5, 0.2, 0.5) > base
    # A revert, two PRs each naming its own issue, or little shared wording and no shared
    # issue: not judged at all, whatever the lead.
    for vetoed in ({"revert_pair": 1.0}, {"distinct_references": 1.0}, {"text": 0.1}):
        assert not may_alert(alike | vetoed)
        assert alert_chance(alike | vetoed, 0.99, 0.0) == 0.0
    assert may_alert({"text": 0.1, "claimed_issue": 1.0})  # the same issue is evidence


def test_the_rules_carry_the_text_only_alert_threshold() -> None:
    from pydantic import ValidationError

    from bot.duplicates.config import DuplicatesRules

    assert DuplicatesRules().scoring_config().text_only_alert_chance == 0.85
    config = DuplicatesRules(text_only_alert_chance=0.6).scoring_config()
    assert config.text_only_alert_chance == 0.6
    # The bars of the rule the model replaced are refused, not silently ignored or read on
    # the new scale (0.15 was a score; as a chance it would flag nearly every pair).
    for old in ("text_only_lead", "text_only_likely_duplicate_score"):
        with pytest.raises(ValidationError, match=old):
            DuplicatesRules(**{old: 0.15})
