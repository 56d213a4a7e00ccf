"""The open-PR index in the database (bot/store/open_prs.py): events, late diffs, incremental
sync. Reconcile against the test server is in tests/test_reconcile.py."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from duplicates_helpers import PATCH, REGISTRY, REPO, tiny_model_files

from bot.core.snapshot import ChangedFile
from bot.duplicates import embeddings
from bot.duplicates.embeddings import Embedder, ModelFiles
from bot.duplicates.features import build_features
from bot.duplicates.records import FileChange, PRRow
from bot.duplicates.scoring import ScoringConfig
from bot.store import open_prs as open_prs_store
from bot.store.open_prs import (
    DatabaseIndex,
    apply_pull_request_event,
    open_pr_count,
    record_diff,
    write_row,
)
from bot.store.schema import open_prs as open_prs_table


def _payload(number: int, action: str, *, title: str, updated: str, sha: str = "s", **pr) -> dict:
    return {
        "action": action,
        "number": number,
        "repository": {"full_name": REPO},
        "pull_request": {
            "number": number,
            "state": "closed" if action == "closed" else "open",
            "title": title,
            "body": pr.get("body", ""),
            "user": {"login": pr.get("author", f"dev{number}")},
            "created_at": "2026-03-01T10:00:00Z",
            "updated_at": updated,
            "head": {"sha": sha},
        },
    }


def _query(engine, title: str, files=None):
    features = build_features(999, title=title, author="me", files=files)
    return DatabaseIndex(engine, REPO).query(features, ScoringConfig(min_score=0.05))


def test_events_update_the_index_incrementally(engine) -> None:
    files = [ChangedFile(REGISTRY, additions=1, patch=PATCH)]
    apply_pull_request_event(
        engine, _payload(1, "opened", title="Add TokenSpeed backend", updated="1"), files
    )
    apply_pull_request_event(
        engine, _payload(2, "opened", title="Refactor tokenizer pool", updated="1"), []
    )
    assert open_pr_count(engine, REPO) == 2
    result = _query(engine, "TokenSpeed MLA backend", [ChangedFile(REGISTRY, patch=PATCH)])
    assert result.candidates[0].number == 1
    assert any("TOKENSPEED_MLA" in str(e) for e in result.candidates[0].evidence)

    # edited: new text, the diff is kept
    apply_pull_request_event(
        engine, _payload(1, "edited", title="Speed up MLA decode", updated="2"), None
    )
    result = _query(engine, "x", [ChangedFile(REGISTRY, patch=PATCH)])
    assert result.candidates[0].number == 1
    assert result.candidates[0].title == "Speed up MLA decode"

    # an older delivery arriving late changes nothing
    apply_pull_request_event(engine, _payload(1, "edited", title="stale", updated="1"), None)
    assert _query(engine, "x", [ChangedFile(REGISTRY, patch=PATCH)]).candidates[0].title != "stale"

    apply_pull_request_event(engine, _payload(1, "closed", title="t", updated="3"), None)
    assert open_pr_count(engine, REPO) == 1
    assert 1 not in [c.number for c in _query(engine, "TokenSpeed backend").candidates]
    apply_pull_request_event(engine, _payload(1, "reopened", title="TokenSpeed", updated="4"), None)
    assert [c.number for c in _query(engine, "TokenSpeed").candidates][:1] == [1]


def test_payloads_that_are_not_prs_change_nothing(engine) -> None:
    apply_pull_request_event(engine, {"action": "opened"}, None)
    apply_pull_request_event(engine, {"pull_request": {"number": "x"}, "repository": {}}, None)
    assert open_pr_count(engine, REPO) == 0
    assert len(DatabaseIndex(engine, REPO)) == 0


def test_a_late_diff_for_the_current_head_is_kept_with_the_newer_text(engine) -> None:
    # synchronize (T2) is seen, then an edit (T3) lands before the synchronize's pipeline job
    # writes the diff it computed: that diff is still the current head's, so it must count.
    files = [ChangedFile(REGISTRY, additions=1, patch=PATCH)]
    apply_pull_request_event(engine, _payload(1, "opened", title="a", updated="1", sha="h1"), [])
    sync = _payload(1, "synchronize", title="TokenSpeed", updated="2", sha="h2")
    apply_pull_request_event(engine, sync, None)
    edited = _payload(1, "edited", title="Speed up MLA decode", updated="3", sha="h2")
    apply_pull_request_event(engine, edited, None)
    apply_pull_request_event(engine, sync, files)  # the pipeline's write, late
    top = _query(engine, "x", [ChangedFile(REGISTRY, patch=PATCH)]).candidates[0]
    assert top.number == 1 and top.title == "Speed up MLA decode"
    assert any("TOKENSPEED_MLA" in str(e) for e in top.evidence)

    # ...but a late diff of an older head, or for a closed PR, changes nothing.
    apply_pull_request_event(engine, _payload(1, "closed", title="t", updated="4", sha="h2"), None)
    apply_pull_request_event(engine, sync, files)
    assert open_pr_count(engine, REPO) == 0


def test_a_late_path_only_write_never_replaces_a_diff(engine) -> None:
    files = [ChangedFile(REGISTRY, additions=1, patch=PATCH)]
    apply_pull_request_event(engine, _payload(1, "opened", title="a", updated="2", sha="h"), files)
    # What reconcile writes for a PR it listed from a cached page: no updated_at, no patches.
    late = PRRow(REPO, 1, "open", "a", "", "dev1", None, "", "h", [FileChange(REGISTRY)], False)
    with engine.begin() as connection:
        assert write_row(connection, late) is False
    top = _query(engine, "x", [ChangedFile(REGISTRY, patch=PATCH)]).candidates[0]
    assert any("TOKENSPEED_MLA" in str(e) for e in top.evidence)


def test_the_pipeline_records_only_the_diff_of_the_head_the_event_recorded(engine) -> None:
    # The handler wrote the text and state at the event; the pipeline adds the diff, once.
    files = [ChangedFile(REGISTRY, additions=1, patch=PATCH)]
    apply_pull_request_event(
        engine, _payload(1, "opened", title="Speed up MLA", updated="1", sha="h1"), None
    )
    assert record_diff(engine, REPO, 1, "h1", files) is True
    top = _query(engine, "x", [ChangedFile(REGISTRY, patch=PATCH)]).candidates[0]
    assert top.title == "Speed up MLA" and any("TOKENSPEED_MLA" in str(e) for e in top.evidence)
    # A run for a head the index no longer holds (a newer push got there), or for a PR it
    # never saw, writes nothing.
    apply_pull_request_event(
        engine, _payload(1, "synchronize", title="Speed up MLA", updated="2", sha="h2"), None
    )
    assert record_diff(engine, REPO, 1, "h1", files) is False
    assert record_diff(engine, REPO, 99, "h1", files) is False


def test_rows_carry_the_text_embedding_and_an_unchanged_text_keeps_its_own(
    engine, monkeypatch
) -> None:
    pytest.importorskip("numpy")
    pytest.importorskip("tokenizers")
    model = Embedder(ModelFiles(*tiny_model_files(), "tiny"), check_digest=False)
    embedded: list[str] = []
    real_embed = model.embed

    def counting(texts):
        embedded.extend(texts)
        return real_embed(texts)

    monkeypatch.setattr(model, "embed", counting)
    monkeypatch.setenv(embeddings.ENV_SWITCH, "1")
    monkeypatch.setattr(embeddings, "_DEFAULT", [model])

    def stored(number: int) -> str:
        return DatabaseIndex(engine, REPO).sync().docs[number].embedding

    apply_pull_request_event(engine, _payload(1, "opened", title="Fix the crash", updated="1"), [])
    first = stored(1)
    assert first and embedded == ["Fix the crash"]
    # A push (same text): no new embedding work, the stored one is kept.
    apply_pull_request_event(
        engine, _payload(1, "synchronize", title="Fix the crash", updated="2"), []
    )
    assert stored(1) == first and len(embedded) == 1
    apply_pull_request_event(
        engine, _payload(1, "edited", title="Add docs for routing", updated="3"), None
    )
    assert stored(1) != first and embedded[-1] == "Add docs for routing"


TEMPLATE = "## Purpose\n\n## Test Plan\n\n- [ ] The test plan, such as providing a test command.\n"


def test_a_row_is_embedded_without_the_template_lines_the_stored_prs_share(
    engine, monkeypatch
) -> None:
    # The audit's figures with the extra embed each PR's own words (benchmarks/_duppr_systems):
    # the service must embed the same text, or those figures are not the service's.
    pytest.importorskip("numpy")
    pytest.importorskip("tokenizers")
    model = Embedder(ModelFiles(*tiny_model_files(), "tiny"), check_digest=False)
    embedded: list[str] = []
    real_embed = model.embed

    def recording(texts):
        embedded.extend(texts)
        return real_embed(texts)

    monkeypatch.setattr(model, "embed", recording)
    monkeypatch.setenv(embeddings.ENV_SWITCH, "1")
    monkeypatch.setattr(embeddings, "_DEFAULT", [model])
    for n in range(1, 7):
        body = f"{TEMPLATE}\nOwn words of change {n}.\n"
        apply_pull_request_event(
            engine, _payload(n, "opened", title=f"Change {n}", updated=str(n), body=body), []
        )
    # Too few PRs before the fifth to know a template: the first ones keep it.
    assert "Test Plan" in embedded[0]
    body = f"{TEMPLATE}\nGuard the loader against an empty config file.\n"
    apply_pull_request_event(
        engine, _payload(7, "opened", title="Fix crash", updated="7", body=body), []
    )
    assert embedded[-1] == "Fix crash\nGuard the loader against an empty config file."
    # Reconcile writes the same text as events do.
    row = PRRow(
        REPO, 8, "open", "Fix crash again", body, "dev8", None, "8", "s8", None, patches_known=False
    )
    open_prs_store.save_reconcile(engine, REPO, [row], [], {})
    assert embedded[-1] == "Fix crash again\nGuard the loader against an empty config file."


def test_a_closed_event_keeps_the_pr_in_the_closed_tier_with_its_outcome(
    engine, monkeypatch
) -> None:
    files = [ChangedFile(REGISTRY, additions=1, patch=PATCH)]
    opened = _payload(1, "opened", title="Add TokenSpeed MLA backend", updated="1")
    apply_pull_request_event(engine, opened, files)
    closed = _payload(1, "closed", title="Add TokenSpeed MLA backend", updated="2")
    closed["pull_request"] |= {"merged": True, "closed_at": "2026-03-02T10:00:00Z"}
    apply_pull_request_event(engine, closed, None)
    assert open_pr_count(engine, REPO) == 0
    result = _query(engine, "TokenSpeed MLA backend", [ChangedFile(REGISTRY, patch=PATCH)])
    assert result.candidates == []
    assert [(c.number, c.state) for c in result.closed] == [(1, "merged")]

    # Bounded: past the keep, the longest-closed rows leave the database.
    monkeypatch.setattr(open_prs_store, "CLOSED_KEEP", 3)
    for n in range(2, 7):
        apply_pull_request_event(engine, _payload(n, "closed", title=f"Old {n}", updated="3"), None)
    with engine.connect() as connection:
        kept = connection.execute(
            sa.select(open_prs_table.c.number).where(open_prs_table.c.state == "closed")
        )
        assert sorted(n for (n,) in kept) == [4, 5, 6]
