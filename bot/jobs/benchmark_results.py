"""vLLM's attention-benchmark JSON (``benchmark.py --output-json``) as samples to compare.

The file is a list with one object per (backend, batch spec, swept parameter): ``config``
(the benchmark configuration), ``mean_time``/``std_time``/``min_time``/``max_time`` in seconds
and ``error``. A failed configuration has ``mean_time: inf`` or an ``error``. There are no raw
samples in it, so the comparison takes each run's ``mean_time`` as one observation.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence

# The fields that name a configuration; everything else in ``config`` that differs between
# entries of one file (a swept model parameter) is added to the label.
NAMING = ("backend", "batch_spec")
MAX_RESULT_BYTES = 20_000_000
# A label names a configuration in the table and the chart; the results file (PR code wrote
# it) may make one any length, so past this it is cut, with a digest of the whole label so
# that two long labels stay two configurations (a backend, a batch spec and a swept
# parameter make a few dozen characters).
MAX_LABEL_CHARS = 120


class ResultError(ValueError):
    """A results file that cannot be read; ``str()`` says why in one line."""


def _entries(
    text: str | bytes, source: str, naming: tuple[str, ...]
) -> list[tuple[str, float, str]]:
    if len(text) > MAX_RESULT_BYTES:
        raise ResultError(f"{source}: over {MAX_RESULT_BYTES // 1_000_000} MB")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ResultError(f"{source}: not JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, list):
        raise ResultError(f"{source}: expected a list of results")
    entries = [entry for entry in data if isinstance(entry, dict)]
    configs = [
        entry.get("config") if isinstance(entry.get("config"), dict) else {} for entry in entries
    ]
    varying = sorted(
        key
        for key in {k for config in configs for k in config}
        if key not in NAMING
        and len({json.dumps(config.get(key), sort_keys=True, default=str) for config in configs})
        > 1
    )
    found = []
    for entry, config in zip(entries, configs, strict=True):
        label = " ".join(str(config.get(key, "?")) for key in naming)
        extras = [f"{key}={config.get(key)}" for key in varying]
        if extras:
            label += f" ({', '.join(extras)})"
        value = entry.get("mean_time")
        failed = entry.get("error") or not isinstance(value, int | float) or isinstance(value, bool)
        found.append(
            (
                bounded_label(label),
                math.inf if failed else float(value),
                str(config.get("backend", "?")),
            )
        )
    return found


def parse_results(
    text: str | bytes, source: str = "results", naming: tuple[str, ...] = NAMING
) -> dict[str, float]:
    """``{config label: mean_time}`` from one run's JSON (inf for a failed configuration).

    ``naming`` is what a label is made of; ``("batch_spec",)`` pairs a backend with another
    on the same batch spec (a new backend against an incumbent).
    """
    return {label: time for label, time, _ in _entries(text, source, naming)}


def backends_by_label(
    text: str | bytes, source: str = "results", naming: tuple[str, ...] = NAMING
) -> dict[str, str]:
    """``{config label: backend}``: which backend ran each configuration of one file."""
    return {label: backend for label, _, backend in _entries(text, source, naming)}


def bounded_label(label: str) -> str:
    """``label``, or its first characters and a digest of all of it when over the bound."""
    if len(label) <= MAX_LABEL_CHARS:
        return label
    digest = hashlib.sha256(label.encode("utf-8", "replace")).hexdigest()[:12]
    return f"{label[: MAX_LABEL_CHARS - 16]}… ({digest})"


def samples_from_runs(
    base_runs: Sequence[dict[str, float]], head_runs: Sequence[dict[str, float]]
) -> dict[str, tuple[list[float], list[float]]]:
    """Per configuration, the base and head times of every run (a missing one counts as failed)."""
    labels: list[str] = []
    for run in [*base_runs, *head_runs]:
        labels.extend(label for label in run if label not in labels)

    def column(runs: Iterable[dict[str, float]], label: str) -> list[float]:
        return [run.get(label, math.inf) for run in runs]

    return {label: (column(base_runs, label), column(head_runs, label)) for label in labels}
