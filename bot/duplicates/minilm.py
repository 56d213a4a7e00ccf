"""A BERT sentence encoder in numpy: all-MiniLM-L6-v2's forward pass, without torch.

Imported only when ``prbot[embeddings]`` is installed (it needs numpy and tokenizers); see
``bot.duplicates.embeddings`` for where the weights come from.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from tokenizers import Tokenizer

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}


def read_safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file (an 8-byte header size, a JSON header, data)."""
    if len(raw) < 8:
        raise ValueError("not a safetensors file (too short)")
    (size,) = struct.unpack("<Q", raw[:8])
    if size > len(raw) - 8 or size > 100_000_000:
        raise ValueError("not a safetensors file (bad header size)")
    header = json.loads(raw[8 : 8 + size])
    if not isinstance(header, dict):
        raise ValueError("not a safetensors file (header is not an object)")
    base = 8 + size
    tensors: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(meta.get("dtype"))
        if dtype is None:
            raise ValueError(f"{name}: unsupported dtype {meta.get('dtype')}")
        start, end = meta["data_offsets"]
        if not 0 <= start <= end <= len(raw) - base:
            raise ValueError(f"{name}: data outside the file")
        count = (end - start) // np.dtype(dtype).itemsize
        array = np.frombuffer(raw, dtype=dtype, count=count, offset=base + start)
        tensors[name] = array.reshape(meta["shape"])
    return tensors


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): numpy has no erf, and
    # BERT's GELU is the exact, erf-based one.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = (
        (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t
    return sign * (1.0 - poly * np.exp(-a * a))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(-1, keepdims=True)
    return centered / np.sqrt(variance + eps) * weight + bias


class _Layer:
    def __init__(self, tensors: dict[str, np.ndarray], prefix: str) -> None:
        def get(name: str) -> np.ndarray:
            return np.asarray(tensors[prefix + name], dtype=np.float32)

        self.qkv_w = np.ascontiguousarray(
            np.concatenate([get(f"attention.self.{n}.weight") for n in ("query", "key", "value")]).T
        )
        self.qkv_b = np.concatenate(
            [get(f"attention.self.{n}.bias") for n in ("query", "key", "value")]
        )
        self.out_w = np.ascontiguousarray(get("attention.output.dense.weight").T)
        self.out_b = get("attention.output.dense.bias")
        norm = "attention.output.LayerNorm."
        self.ln1 = (get(norm + "weight"), get(norm + "bias"))
        self.up_w = np.ascontiguousarray(get("intermediate.dense.weight").T)
        self.up_b = get("intermediate.dense.bias")
        self.down_w = np.ascontiguousarray(get("output.dense.weight").T)
        self.down_b = get("output.dense.bias")
        self.ln2 = (get("output.LayerNorm.weight"), get("output.LayerNorm.bias"))


class SentenceEncoder:
    """Texts to unit vectors, as sentence-transformers' BERT + mean pooling + normalise."""

    def __init__(
        self, weights: bytes, tokenizer_json: str, config: dict[str, Any], max_tokens: int
    ) -> None:
        tensors = read_safetensors(weights)
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if self.hidden % self.heads:
            raise ValueError("hidden size is not a multiple of the head count")
        positions = int(config.get("max_position_embeddings", 512))
        self.max_tokens = min(max_tokens, positions)

        def get(name: str) -> np.ndarray:
            return np.asarray(tensors[name], dtype=np.float32)

        self.words = get("embeddings.word_embeddings.weight")
        self.positions = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")[0]
        self.ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers = [
            _Layer(tensors, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))
        ]
        self.tokenizer = Tokenizer.from_str(tokenizer_json)
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.no_padding()

    @property
    def dimensions(self) -> int:
        return self.hidden

    def encode(self, texts: Sequence[str], batch: int = 16) -> np.ndarray:
        """One unit-length float32 row per text (an empty text gives a zero row)."""
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        # Similar lengths together: padding is wasted work.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            out[chunk] = self._forward([encodings[i].ids for i in chunk])
        return out

    def _forward(self, ids_list: list[list[int]]) -> np.ndarray:
        count = len(ids_list)
        length = max(1, max(len(ids) for ids in ids_list))
        ids = np.zeros((count, length), dtype=np.int64)
        mask = np.zeros((count, length), dtype=np.float32)
        for row, token_ids in enumerate(ids_list):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1.0
        hidden, heads = self.hidden, self.heads
        width = hidden // heads
        x = self.words[ids] + self.positions[:length] + self.token_type
        x = _layer_norm(x, *self.ln, self.eps).reshape(count * length, hidden)
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(width))
        for layer in self.layers:
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(count, length, 3, heads, width)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 1, 3)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            scores = np.einsum("bhld,bhmd->bhlm", q, k, optimize=True) * scale + blocked
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = np.einsum("bhlm,bhmd->blhd", scores, v, optimize=True)
            attended = context.reshape(count * length, hidden) @ layer.out_w + layer.out_b
            x = _layer_norm(x + attended, *layer.ln1, self.eps)
            up = x @ layer.up_w + layer.up_b
            up = 0.5 * up * (1.0 + _erf(up * np.float32(1.0 / np.sqrt(2.0))))
            x = _layer_norm(x + up @ layer.down_w + layer.down_b, *layer.ln2, self.eps)
        x = x.reshape(count, length, hidden)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
