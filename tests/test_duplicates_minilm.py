"""The numpy sentence encoder, on a tiny random BERT the tests make, against a plain
one-text-at-a-time reference written from the BERT paper's equations."""

from __future__ import annotations

import math

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")

from duplicates_helpers import tiny_model_files  # noqa: E402

from bot.duplicates.minilm import SentenceEncoder, read_safetensors  # noqa: E402


def _reference(weights: bytes, config: dict, ids: list[int]) -> np.ndarray:
    """BERT for one unpadded sequence, head by head, with math.erf's GELU."""
    t = {k: np.asarray(v, dtype=np.float64) for k, v in read_safetensors(weights).items()}
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]

    def norm(x, prefix):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * t[prefix + "weight"] + t[prefix + "bias"]

    def dense(x, prefix):
        return x @ t[prefix + "weight"].T + t[prefix + "bias"]

    x = (
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][: len(ids)]
    )
    x = norm(x + t["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm.")
    width = config["hidden_size"] // heads
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(x, f"{p}attention.self.{n}.") for n in ("query", "key", "value"))
        parts = []
        for h in range(heads):
            cols = slice(h * width, (h + 1) * width)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(width)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            parts.append(scores / scores.sum(-1, keepdims=True) @ v[:, cols])
        x = norm(
            x + dense(np.hstack(parts), f"{p}attention.output.dense."),
            f"{p}attention.output.LayerNorm.",
        )
        up = dense(x, f"{p}intermediate.dense.")
        up = 0.5 * up * (1 + np.vectorize(math.erf)(up / math.sqrt(2)))
        x = norm(x + dense(up, f"{p}output.dense."), f"{p}output.LayerNorm.")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


TEXTS = ["Fix the crash in loader", "add docs for routing", "Fix typo!", "caches", "fix"]


@pytest.fixture(scope="module")
def model():
    weights, tokenizer, config = tiny_model_files()
    return weights, config, SentenceEncoder(weights, tokenizer, config, max_tokens=256)


def test_a_batch_of_different_lengths_encodes_each_text_as_alone(model) -> None:
    weights, config, encoder = model
    batch = encoder.encode(TEXTS, batch=4)
    for text, row in zip(TEXTS, batch, strict=True):
        ids = encoder.tokenizer.encode(text).ids
        np.testing.assert_allclose(row, _reference(weights, config, ids), atol=2e-5)
        np.testing.assert_allclose(encoder.encode([text])[0], row, atol=1e-6)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_long_text_is_cut_at_the_position_table(model) -> None:
    weights, config, encoder = model
    # The tiny model has 32 positions: a longer text is truncated, not an index error.
    [row] = encoder.encode(["fix the crash " * 40])
    ids = encoder.tokenizer.encode("fix the crash " * 40).ids
    assert len(ids) == 32
    np.testing.assert_allclose(row, _reference(weights, config, ids), atol=2e-5)


@pytest.mark.parametrize(
    "raw",
    [b"", b"\x10\x00\x00\x00\x00\x00\x00\x00{}", b"\xff" * 8 + b"{}"],
)
def test_a_file_that_is_not_safetensors_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        read_safetensors(raw)


def test_tensors_pointing_outside_the_file_are_refused() -> None:
    header = b'{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}'
    with pytest.raises(ValueError, match="outside"):
        read_safetensors(len(header).to_bytes(8, "little") + header + b"\x00" * 4)
