"""Reading a PR export (JSONL, one record per line) into records and an index.

A bad line is reported as one line naming it (line number, and the PR number when known)
and skipped; the rest of the file is still read.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from bot.duplicates.embeddings import embed_texts
from bot.duplicates.features import features_from_record
from bot.duplicates.index import MemoryIndex
from bot.duplicates.records import PRRecord, RecordError, RecordProblem, record_from_dict

ProblemSink = Callable[[RecordProblem], None]


class ExportError(ValueError):
    """The export as a whole cannot be read (missing file, a directory, ...)."""


def _stderr(problem: RecordProblem) -> None:
    print(f"prbot: warning: {problem}", file=sys.stderr)


def load_export(path: str | Path, on_problem: ProblemSink = _stderr) -> list[PRRecord]:
    """All usable records in the file, in file order (a repeated number: the last wins)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ExportError(f"{path}: cannot read the PR export: {exc.strerror}") from None
    records: dict[int, PRRecord] = {}
    for line_number, raw_line in enumerate(raw.splitlines(), start=1):
        where = f"{path.name}:{line_number}"
        if not raw_line.strip():
            continue
        try:
            line, bad_utf8 = raw_line.decode("utf-8"), False
        except UnicodeDecodeError:
            line, bad_utf8 = raw_line.decode("utf-8", "replace"), True
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if bad_utf8:
                on_problem(RecordProblem(where, "not valid UTF-8"))
            on_problem(RecordProblem(where, f"malformed JSON ({exc.msg} at column {exc.colno})"))
            continue
        number = data.get("number") if isinstance(data, dict) else None
        named = isinstance(number, int) or (isinstance(number, str) and number.strip().isdigit())
        label = f"{where} (#{str(number).strip()})" if named else where
        if bad_utf8:
            on_problem(RecordProblem(label, "not valid UTF-8; undecodable bytes replaced"))
        try:
            record = record_from_dict(data)
        except RecordError as exc:
            on_problem(RecordProblem(label, f"skipped: {exc}"))
            continue
        for message in record.problems:
            on_problem(RecordProblem(label, message))
        if record.number in records:
            on_problem(RecordProblem(label, "repeats an earlier record; this one is used"))
            del records[record.number]
        records[record.number] = record
    return list(records.values())


def index_from_records(records: list[PRRecord], *, open_only: bool = True) -> MemoryIndex:
    """An index of the records; by default the open ones, with closed and merged ones in the
    closed tier (compared, listed apart, never ranked among open work).

    ``prbot duplicates`` ranks every PR in the file against every other, whatever its state.
    """
    features = [features_from_record(r) for r in records]
    # The template is what the file's PRs share line for line: learned before embedding, so the
    # model reads each PR's own words.
    lines = MemoryIndex(features)
    vectors = embed_texts([(r.title, r.body) for r in records], lines)
    for f, vector in zip(features, vectors, strict=True):
        f.embedding = vector
    if not open_only:
        return MemoryIndex(features)
    return MemoryIndex(
        [f for f in features if f.state == "open"], [f for f in features if f.state != "open"]
    )


def load_index_from_export(path: str | Path, on_problem: ProblemSink = _stderr) -> MemoryIndex:
    """The open-PR index ``prbot check --open-prs FILE`` hands to the duplicates check."""
    return index_from_records(load_export(path, on_problem))
