"""Checking one generated doc against its source: committed tables and marker templates.

A committed doc has its tables in the file; they are compared cell by cell with the tables
rendered from source, and ``write`` puts the rendered tables in place, touching nothing
else. A marker doc (``--8<-- "gen:KEY"``) is filled at docs-build time; there we check
that markers and generated blocks match, and preview what a PR changes in the content.
"""

from __future__ import annotations

import difflib
import logging
import re
from pathlib import Path
from typing import Any

from bot.core.globs import path_matches
from bot.core.limits import MAX_DOC_BYTES, InputRejected, check_size
from bot.core.sections import Cache, CommandRunner
from bot.core.snapshot import TreeReader
from bot.gendocs.config import DocRule
from bot.gendocs.doc_diff import (
    block_table_texts,
    block_tables,
    doc_tables,
    explain,
    extractor_disagreements,
)
from bot.gendocs.findings import DocResult, Expected, expected_tables
from bot.gendocs.generator import NOT_ISOLATED, GeneratorRun, NotRun, run_doc_generator
from bot.gendocs.render import layout, render_block
from bot.gendocs.source import Problem
from bot.gendocs.tables import (
    ABSENT,
    MISSING,
    CellDiff,
    Region,
    compare_tables,
    find_region,
    parse_text_table,
)
from bot.jobs.backends import registered_backends

MARKER = re.compile(r'--8<-- "gen:([^"]*)"')
log = logging.getLogger(__name__)


def doc_mode(rule: DocRule, text: str) -> str:
    if rule.mode != "auto":
        return rule.mode
    return "markers" if MARKER.search(text) else "committed"


def check_committed(rule: DocRule, text: str, expected: Expected) -> DocResult:
    """Compare every table region of a committed doc with the rendered tables."""
    result = DocResult(rule.path, "committed", actual_text=text, fix_command=rule.fix_command)
    result.problems.extend(expected.problems)
    lines = text.split("\n")
    replacements: list[tuple[int, int, list[str]]] = []
    for key, anchors in layout(rule.template).regions.items():
        region = find_region(lines, key, anchors)
        want = expected.tables.get(key)
        if region.missing_anchor is not None:
            if want is not None:
                result.problems.append(
                    Problem(
                        rule.path,
                        f"table {key}: the line {region.missing_anchor!r} it follows is gone, "
                        "so the table cannot be placed",
                    )
                )
            continue
        replacements.extend(_compare_region(rule, region, want, expected, result))
    for start, end, new in sorted(replacements, reverse=True):
        lines[start:end] = new
    result.expected_text = "\n".join(lines)
    return result


def _compare_region(
    rule: DocRule, region: Region, want: str | None, expected: Expected, result: DocResult
) -> list[tuple[int, int, list[str]]]:
    key, table = region.key, region.table
    if table is not None:
        for line, problem in table.broken:
            result.problems.append(
                Problem(rule.path, f"table {key} is broken: {problem}", line, "warning")
            )
    if want is None:
        if table is None:
            return []
        result.cells.append(CellDiff(key, "(table)", "(table)", ABSENT, "present", "table"))
        return [(table.start, table.end + _blank_after(table.end, result), [])]
    rendered = parse_text_table(want, key)
    if table is None:
        result.cells.append(CellDiff(key, "(table)", "(table)", "present", MISSING, "table"))
        return [(region.anchor_line + 1, region.anchor_line + 1, ["", *want.split("\n")])]
    diffs = compare_tables(rendered, table)
    lines = (result.actual_text or "").split("\n")
    # Without a blank line after it, Markdown reads the next line as one more table row.
    glued = table.end < len(lines) and bool(lines[table.end].strip())
    if glued:
        diffs.append(
            CellDiff(key, "(after table)", "(blank line)", "blank", lines[table.end], "layout")
        )
    # A backend whose source could not be read has an unknown row: say so once (the
    # problem names the file) instead of calling its row stale. Priority tables come from
    # cuda.py alone, so their rows stay known.
    kind = layout(rule.template).tables.get(key, {}).get("kind")
    unknown = {"feature": set(expected.unreadable), "prefill": set(expected.unreadable_prefill)}
    unknown = unknown.get(kind, set())
    diffs = [d for d in diffs if d.row.split(" ")[0] not in unknown]
    result.cells.extend(diffs)
    if not diffs:
        return []
    if any(label.split(" ")[0] in unknown for label in table.labels()):
        # The rendered table lacks the unreadable backends' rows; writing it would drop
        # them. The differences are reported, the table is left as it is.
        return []
    return [(table.start, table.end, want.split("\n") + ([""] if glued else []))]


def _blank_after(end: int, result: DocResult) -> int:
    lines = (result.actual_text or "").split("\n")
    return 1 if end < len(lines) and not lines[end].strip() else 0


def masked_prose(text: str, template: str) -> list[str]:
    """The doc's lines with every table region replaced by one placeholder line."""
    lines = text.split("\n")
    spans = []
    for key, anchors in layout(template).regions.items():
        region = find_region(lines, key, anchors)
        if region.table is not None:
            spans.append((region.table.start, region.table.end, key))
    for start, end, key in sorted(spans, reverse=True):
        lines[start:end] = [f"<table {key}>"]
    return lines


def prose_edits(base_text: str, head_text: str, template: str) -> list[dict[str, Any]]:
    """Lines outside the tables that differ between base and head (head line numbers)."""
    before = masked_prose(base_text, template)
    after = masked_prose(head_text, template)
    edits: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            {
                "line": b0 + 1,
                "before": "\n".join(before[a0:a1]),
                "after": "\n".join(after[b0:b1]),
            }
        )
    return edits


def check_markers(
    rule: DocRule, text: str, head: Expected, base: Expected | None = None
) -> DocResult:
    """Markers against generated blocks, plus a preview of what the PR changes in them."""
    result = DocResult(rule.path, "markers", actual_text=text, fix_command=rule.fix_command)
    result.problems.extend(head.problems)
    found = MARKER.findall(text)
    blocks = layout(rule.template).blocks
    for key in found:
        if key not in blocks:
            result.problems.append(
                Problem(rule.path, f'marker --8<-- "gen:{key}" has no generated content to fill it')
            )
    for key in blocks:
        content = render_block(key, head.tables, rule.template)
        if key not in found and content and _has_rows(content):
            result.problems.append(
                Problem(rule.path, f'generated block {key} has no --8<-- "gen:{key}" marker')
            )
    if base is not None:
        result.preview = preview_changes(base.tables, head.tables)
    return result


def _has_rows(content: str) -> bool:
    table_lines = [line for line in content.split("\n") if line.startswith("|")]
    return len(table_lines) > 2


# What vLLM's generator writes in a cell it could not read the backend for: "Any" (or
# nothing) anywhere, and per column what its parsers return when the class itself declares
# nothing (docs/mkdocs/gen_files/generate_attention_backends.py at 0.33.0:
# parse_supported_dtypes, parse_kv_cache_dtypes, and False for each feature flag).
DEFAULT_CELLS = frozenset({"Any", "any", ""})
COLUMN_DEFAULTS = {
    "Dtypes": "fp16, bf16",
    "KV Dtypes": "`auto`",
    "Sink": "❌",
    "Non-Causal": "❌",
    "Sparse": "❌",
    "MM Prefix": "❌",
    "DCP": "❌",
}
REGISTRY = "vllm/v1/attention/backends/registry.py"
_REGISTRY_ENUMS = ("AttentionBackendEnum", "MLAPrefillBackendEnum")


def _to_default(cell: dict[str, str]) -> bool:
    """The cell went from a specific value to what the generator writes knowing nothing."""
    defaults = DEFAULT_CELLS | {COLUMN_DEFAULTS.get(cell.get("column", ""), "")}
    return cell["after"] in defaults and cell["before"] not in defaults


def lost_information(path: str, preview: list[dict[str, str]], head: TreeReader) -> list[Problem]:
    """A warning per row whose changed cells all went from specific values to defaults
    (``Any``, or the column's default, in every changed column): more likely the generator
    failing to read that backend than a change the PR meant. Names the file the generator
    read for the row, when the registry says."""
    rows: dict[tuple[str, str], list[dict[str, str]]] = {}
    for change in preview:
        if change.get("change") == "changed":
            rows.setdefault((change["table"], change["row"]), []).append(change)
    lost = [
        (key, cells)
        for key, cells in rows.items()
        if len(cells) >= 2 and all(_to_default(c) for c in cells)
    ]
    if not lost:
        return []
    registry = head.read_text(REGISTRY) or ""
    modules = {
        b.name: b.module_path for b in registered_backends(registry, REGISTRY, _REGISTRY_ENUMS)[0]
    }
    problems = []
    for (table, row), cells in lost:
        name = row.strip("`").split(" ")[0].strip("`")
        source = modules.get(name)
        read = f" (it read {source})" if source else ""
        columns = ", ".join(c["column"] for c in cells[:6])
        if len(cells) > 6:
            columns += f" and {len(cells) - 6} more"
        problems.append(
            Problem(
                path,
                f"{table} | {row}: {len(cells)} cells went from specific values to defaults "
                f"({columns}): the generator may have failed to read this backend{read}",
                severity="warning",
            )
        )
    return problems


def preview_changes(before: dict[str, str], after: dict[str, str]) -> list[dict[str, str]]:
    """What changes in the generated tables between two revisions, row by row."""
    kinds = {"missing_row": "added", "extra_row": "removed", "cell": "changed", "order": "moved"}
    out: list[dict[str, str]] = []
    for key in sorted(set(before) | set(after)):
        old = parse_text_table(before[key], key) if key in before else None
        new = parse_text_table(after[key], key) if key in after else None
        if old is None or new is None:
            out.append(
                {
                    "table": key,
                    "row": "(table)",
                    "column": "(table)",
                    "before": "present" if old else ABSENT,
                    "after": "present" if new else ABSENT,
                    "change": "added" if new else "removed",
                }
            )
            continue
        for diff in compare_tables(new, old):
            out.append(
                {
                    "table": key,
                    "row": diff.row,
                    "column": diff.column,
                    "before": diff.actual,
                    "after": diff.expected,
                    "change": kinds.get(diff.kind, diff.kind),
                }
            )
    return out


def check_doc(
    rule: DocRule,
    head: TreeReader,
    base: TreeReader | None = None,
    *,
    changed_paths: list[str] | None = None,
    cache: Cache | None = None,
    runner: CommandRunner | None = None,
    work_dir: Path | None = None,
    trusted: bool = True,
) -> DocResult | None:
    """The finding for one doc at ``head`` (None when the doc does not exist there).

    Where the rules name the repository's generator for the doc, its output (the base
    revision's generator, run sandboxed on ``head``) is the expected doc, and prbot's
    extractor only explains. Otherwise the extractor and template are the judge; with
    ``base`` (a PR), prose edited outside the tables is reported, and marker docs get a
    preview of the PR's changes to the content.
    """
    text = head.read_text(rule.path)
    if text is None:
        return None
    try:
        check_size(rule.path, text, MAX_DOC_BYTES, "a generated doc")
    except InputRejected as exc:
        result = DocResult(rule.path, "committed", fix_command=rule.fix_command)
        result.problems.append(Problem(rule.path, exc.reason))
        return result
    mode = doc_mode(rule, text)
    generator_changed = bool(
        changed_paths and any(path_matches(p, g) for p in changed_paths for g in rule.generator)
    )
    run = run_doc_generator(
        rule,
        mode,
        head,
        runner=runner,
        work_dir=work_dir,
        base=base,
        trusted=trusted,
        generator_changed=generator_changed,
        cache=cache,
    )
    if isinstance(run, GeneratorRun):
        result = judged_by_generator(rule, text, mode, run, head, cache=cache)
        if base is not None and mode == "markers" and run.ok:
            result.preview = _generated_preview(rule, run, base, runner, work_dir, cache)
    else:
        result = judged_by_extractor(rule, text, mode, head, base, generator_changed, cache)
        if isinstance(run, NotRun):
            result.notes.append(f"{run.reason}; checked with prbot's own extractor")
    result.problems.extend(lost_information(rule.path, result.preview, head))
    result.generator_changed = generator_changed
    if generator_changed and isinstance(run, GeneratorRun):
        result.notes.append(
            "the PR changes the doc's generator; "
            + (
                "ran the PR's generator (the head is trusted)"
                if run.ran_from == "head"
                else "ran the base revision's generator (the author is not trusted)"
                if not trusted
                else f"ran the base revision's generator: {NOT_ISOLATED}"
            )
        )
    elif generator_changed:
        result.notes.append(
            "the PR changes the doc's generator; the tables are checked with prbot's own "
            "extractor, which follows the released generator's rules"
        )
    return result


GENERATOR_ORIGIN = {
    "base": "the base revision's generator",
    "head": "the PR's generator",
    "tree": "the repository's generator",
}


def judged_by_generator(
    rule: DocRule, text: str, mode: str, run: GeneratorRun, head: TreeReader, *, cache=None
) -> DocResult:
    """The doc against its generator's output; the extractor's view is kept aside."""
    result = DocResult(rule.path, mode, actual_text=text, fix_command=rule.fix_command)
    result.generator = run.describe()
    origin = GENERATOR_ORIGIN.get(run.ran_from, "the generator")
    if not run.ok:
        result.problems.append(
            Problem(rule.path, f"could not run {origin} {run.script}: {run.error}")
        )
        return result
    if mode == "committed":
        result.expected_text = run.text or ""
        result.cells = explain(result.expected_text, text, rule.template)
        regions = layout(rule.template).regions
        generated = {
            k: t for k, t in doc_tables(result.expected_text, rule.template).items() if k in regions
        }
        extracted = expected_tables(rule, head, cache=cache)
    else:
        if run.marker_error:
            result.cells.append(
                CellDiff(
                    "(markers)",
                    "(page)",
                    "marker",
                    "every marker filled",
                    run.marker_error,
                    "marker",
                )
            )
        generated = block_tables(run.blocks or {}, rule.template)
        extracted = expected_tables(rule, head, split_special=True, cache=cache)
    result.extractor_disagreements = extractor_disagreements(generated, extracted.tables)
    result.extractor_cells_compared = sum(len(t.header) * len(t.rows) for t in generated.values())
    result.extractor_problems = [p for p in extracted.problems if p.severity == "error"]
    if result.extractor_disagreements or result.extractor_problems:
        first = (result.extractor_disagreements or result.extractor_problems)[0]
        log.warning(
            "gendocs: prbot's extractor disagrees with %s on %s (%d cells, %d problems), e.g. %s",
            origin,
            rule.path,
            len(result.extractor_disagreements),
            len(result.extractor_problems),
            first,
        )
    return result


def _generated_preview(
    rule: DocRule,
    head_run: GeneratorRun,
    base: TreeReader,
    runner: CommandRunner | None,
    work_dir: Path | None,
    cache: Cache | None,
) -> list[dict[str, str]]:
    """What the PR changes in the generated blocks: the base's generator on the base tree."""
    before = run_doc_generator(rule, "markers", base, runner=runner, work_dir=work_dir, cache=cache)
    if not isinstance(before, GeneratorRun) or not before.ok or before.blocks is None:
        return []
    return preview_changes(
        block_table_texts(before.blocks, rule.template),
        block_table_texts(head_run.blocks or {}, rule.template),
    )


def _factory_notes(expected: Expected) -> list[str]:
    return [
        f"backend {entry}: built by a factory call, so it has no row of its own"
        for entry in expected.factory_built
    ]


def judged_by_extractor(
    rule: DocRule,
    text: str,
    mode: str,
    head: TreeReader,
    base: TreeReader | None,
    generator_changed: bool,
    cache: Cache | None,
) -> DocResult:
    """The doc against prbot's extractor and template (no generator for it)."""
    if mode == "markers":
        head_expected = expected_tables(rule, head, split_special=True, cache=cache)
        base_expected = (
            expected_tables(rule, base, split_special=True, cache=cache)
            if base is not None
            else None
        )
        result = check_markers(rule, text, head_expected, base_expected)
        result.notes.extend(_factory_notes(head_expected))
        return result
    head_expected = expected_tables(rule, head, cache=cache)
    result = check_committed(rule, text, head_expected)
    result.notes.extend(_factory_notes(head_expected))
    base_text = base.read_text(rule.path) if base is not None else None
    if base_text is not None and base_text != text and doc_mode(rule, base_text) == mode:
        edits = prose_edits(base_text, text, rule.template)
        if edits and not generator_changed:
            result.manual_edits = edits
        elif edits:
            result.notes.append(
                "the PR edits the text around the tables and also changes the generator"
            )
    return result
