"""Turns the hand-written labelled cases (cases.yaml) into PR export records and labels.

cases.yaml keeps each PR short: its text, and per file a tiny diff notation:
``@N`` starts a hunk at base line N, ``+text`` adds a line, ``-text`` removes one. The
builder writes real unified-diff hunks (with three context lines either side), so the
records look like GitHub's ``pulls/N/files``. ``files`` absent means a text-only record;
a file whose value is ``binary`` has no patch. ``template: true`` wraps the body in vLLM's
PR template, as most real vLLM PRs are. ``dup: NAME`` labels duplicate groups.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
EPOCH = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

# Written for this set, laid out like vLLM's PR template: a shouted instruction, three
# headings, a folded checklist and a closing note.
TEMPLATE = """<!-- keep the sections below -->
DESCRIBE THE CHANGE BELOW AND TICK EVERY ITEM OF THE CHECKLIST.

## Purpose
{purpose}

## Test Plan
{test}

## Test Result
{result}

---
<details>
<summary> Checklist for a reviewable description </summary>

- [ ] Why the change is needed, with links to the issues it resolves.
- [ ] How it was tested, with the commands.
- [ ] What the tests showed, before and after.
- [ ] (Optional) Documentation updated for user-facing changes.
</details>

**READ THE CONTRIBUTING GUIDE BEFORE SUBMITTING** (text below this line is removed by CI)
"""


def render_patch(spec: str) -> tuple[str, int, int]:
    """(unified-diff hunks, additions, deletions) from the compact notation."""
    hunks: list[tuple[int, list[str]]] = []
    for line in spec.splitlines():
        if line.startswith("@"):
            hunks.append((int(line[1:].split()[0]), []))
        elif line[:1] in "+-" and hunks:
            hunks[-1][1].append(line)
    out, additions, deletions = [], 0, 0
    for start, body in hunks:
        added = sum(1 for b in body if b.startswith("+"))
        removed = len(body) - added
        additions, deletions = additions + added, deletions + removed
        old_start = max(1, start - 3)
        context_before = start - old_start
        old_lines = context_before + removed + 3
        new_lines = context_before + added + 3
        out.append(f"@@ -{old_start},{old_lines} +{old_start},{new_lines} @@")
        out += [f"     # context line {old_start + i}" for i in range(context_before)]
        out += body
        out += [f"     # context line {start + removed + i}" for i in range(3)]
    return "\n".join(out), additions, deletions


def record(case: dict[str, Any]) -> dict[str, Any]:
    body = case.get("body", "")
    if case.get("template"):
        body = TEMPLATE.format(
            purpose=body.strip(),
            test=case.get("test", ""),
            result=case.get("result", ""),
        )
    out: dict[str, Any] = {"number": case["number"], "title": case.get("title", "")}
    if case.get("text_only"):
        out["body"] = body
        return out
    out.update(
        body=body,
        author=case.get("author", f"dev{case['number']}"),
        created_at=(EPOCH + timedelta(hours=float(case.get("day", 0)) * 24))
        .isoformat()
        .replace("+00:00", "Z"),
        state="open",
        head_sha=f"{case['number']:040x}",
    )
    files = []
    for path, spec in (case.get("files") or {}).items():
        if spec == "binary":
            files.append({"path": path, "additions": 0, "deletions": 0})
            continue
        patch, additions, deletions = render_patch(spec or "")
        entry = {"path": path, "additions": additions, "deletions": deletions}
        if patch:
            entry["patch"] = patch
        files.append(entry)
    out["files"] = files
    return out


def load_cases(
    path: Path = HERE / "cases.yaml",
) -> tuple[list[dict[str, Any]], dict[int, set[int]]]:
    """(export records, number -> the numbers of its true duplicates)."""
    cases = yaml.safe_load(path.read_text())
    records = [record(case) for case in cases]
    groups: dict[str, set[int]] = {}
    for case in cases:
        if case.get("dup"):
            groups.setdefault(case["dup"], set()).add(case["number"])
    truth = {n: set() for n in (c["number"] for c in cases)}
    for members in groups.values():
        for number in members:
            truth[number] = members - {number}
    return records, truth


def write_export(dest: Path) -> Path:
    records, _ = load_cases()
    dest.write_text("".join(json.dumps(r) + "\n" for r in records))
    return dest


if __name__ == "__main__":
    import sys

    print(write_export(Path(sys.argv[1] if len(sys.argv) > 1 else "duplicates_eval.jsonl")))
