"""Records and constants shared by the duplicates tests."""

from __future__ import annotations

import json
from pathlib import Path

REPO = "acme/engine"
REGISTRY = "vllm/v1/attention/backends/registry.py"
PATCH = '@@ -58,3 +58,4 @@\n ctx\n+    TOKENSPEED_MLA = "x.TokenSpeedBackend"\n'


def write_export(path: Path, lines: list[object]) -> Path:
    raw = b""
    for line in lines:
        raw += (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
    path.write_bytes(raw)
    return path


def sample_records() -> list[object]:
    files = [{"path": REGISTRY, "additions": 1, "deletions": 0, "patch": PATCH}]
    return [
        {"number": 1, "title": "Add TokenSpeed MLA backend", "author": "a", "files": files},
        {"number": 2, "title": "Integrate tokenspeed decode", "author": "b", "files": files},
        {"number": 3, "title": "Docs: typo", "body": "", "author": "c"},
        {"number": 4, "title": "[Bug] Crash with EAGLE3 drafter and cuda graphs"},
        {
            "number": 5,
            "title": "Fix eagle3 drafter illegal memory access with cudagraphs",
            "state": "closed",  # the sweep ranks every PR in the file; the check only open ones
        },
    ]


TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "fix", "the", "crash", "in", "loader"]
TINY_VOCAB += ["add", "docs", "for", "routing", "##s", "##ing", "cache", "typo", "!", "."]


def tiny_model_files(seed: int = 0) -> tuple[bytes, str, dict]:
    """(safetensors bytes, tokenizer.json, config.json) of a random two-layer BERT encoder
    shaped like all-MiniLM-L6-v2 but tiny: the real loading code runs on files it can make."""
    import numpy as np
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    hidden, heads, inner, layers = 8, 2, 16, 2
    config = {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": inner,
        "num_hidden_layers": layers,
        "max_position_embeddings": 32,
        "layer_norm_eps": 1e-12,
    }
    rng = np.random.default_rng(seed)
    shapes = {
        "embeddings.word_embeddings.weight": (len(TINY_VOCAB), hidden),
        "embeddings.position_embeddings.weight": (32, hidden),
        "embeddings.token_type_embeddings.weight": (2, hidden),
        "embeddings.LayerNorm.weight": (hidden,),
        "embeddings.LayerNorm.bias": (hidden,),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            shapes[f"{p}attention.self.{name}.weight"] = (hidden, hidden)
            shapes[f"{p}attention.self.{name}.bias"] = (hidden,)
        shapes[f"{p}attention.output.dense.weight"] = (hidden, hidden)
        shapes[f"{p}attention.output.dense.bias"] = (hidden,)
        shapes[f"{p}attention.output.LayerNorm.weight"] = (hidden,)
        shapes[f"{p}attention.output.LayerNorm.bias"] = (hidden,)
        shapes[f"{p}intermediate.dense.weight"] = (inner, hidden)
        shapes[f"{p}intermediate.dense.bias"] = (inner,)
        shapes[f"{p}output.dense.weight"] = (hidden, inner)
        shapes[f"{p}output.dense.bias"] = (hidden,)
        shapes[f"{p}output.LayerNorm.weight"] = (hidden,)
        shapes[f"{p}output.LayerNorm.bias"] = (hidden,)
    header: dict = {"__metadata__": {"format": "pt"}}
    data = b""
    for name, shape in shapes.items():
        values = rng.normal(0, 0.5, shape).astype("<f4")
        if name.endswith("LayerNorm.weight"):
            values = (1 + 0.1 * values).astype("<f4")
        raw = values.tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    encoded = json.dumps(header).encode()
    weights = len(encoded).to_bytes(8, "little") + encoded + data

    tokenizer = Tokenizer(
        models.WordPiece({t: i for i, t in enumerate(TINY_VOCAB)}, unk_token="[UNK]")
    )
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return weights, tokenizer.to_str(), config
