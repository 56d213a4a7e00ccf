"""prbot's full report on five real vLLM changes, for a maintainer to judge by hand.

Run by hand (never in CI), one report at a time:

    PRBOT_BENCH_CACHE=/tmp/prbot-bench uv run python benchmarks/maintainer_audit.py \
        [--out /tmp/audit] [a b c d e]

The five cases: (a) 0.20.2 plus 0.21.0's TOKENSPEED_MLA backend file and registry entry
(``vllm_releases.tokenspeed_pair``), (b) 0.20.2 -> 0.21.0, (c) 0.27.1 -> 0.33.0, (d) 0.21.0
with one pin changed in ``requirements/cuda.txt``, (e) 0.21.0 with one cell of the generated
attention-backend doc edited by hand. (d) and (e) are built under ``--out`` (never in the
shared cache), as bare clones of the 0.20.2..0.21.0 pair with branches ``base`` and ``pr``.

Each report is written as ``--out/reports/<case>.md``, and every requirement line it shows
(``added``/``changed``/``removed`` ... ``at FILE:LINE``) is checked against the trees: the
cited line must name the package, and the specifier shown must be the cited line's (with
those of the lines it names after "with"). The
"What this PR changes in the generated content" (the attention-backend doc's previews,
(c)) is checked against vLLM's own generator, run here on each side's tree with prbot's
mkdocs stand-in (release code from PyPI, in a subprocess, ``python -I -S``). The verdicts on
the rest are by hand, in ``docs/benchmarks/maintainer_audit.md``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.vllm_releases import pair, tokenspeed_pair  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# (d): the pin, and (e): the hand edit, as (path, old text, new text, commit message).
EDITS = {
    "d": ("requirements/cuda.txt", "nvidia-cutlass-dsl==4.4.2\n", "nvidia-cutlass-dsl==4.4.1\n",
          "Pin nvidia-cutlass-dsl to 4.4.1"),
    "e": ("docs/design/attention_backends.md",
          "| `TOKENSPEED_MLA` | fp16, bf16 | `fp8`, `fp8_e4m3` | 32, 64 |",
          "| `TOKENSPEED_MLA` | fp16, bf16 | `fp8`, `fp8_e4m3` | 32, 64, 128 |",
          "docs: TOKENSPEED_MLA block sizes"),
}  # fmt: skip
REQUIREMENT_LINE = re.compile(
    r"^- (added|removed|changed) `([^`]+)`(?: → `([^`]+)`)? (?:at|\(was at) `([^`:]+):(\d+)`"
    r"(?: \(removed\))?(?: \(with ((?:`[^`]+`(?:, )?)+)\))?",
    re.M,
)


def _git(repo: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def _edited(case: str, out: Path) -> tuple[Path, str, str]:
    """0.21.0 (``base``) and one commit on it (``pr``), in a bare clone under ``out``."""
    path, old, new, message = EDITS[case]
    repo = out / f"{case}.git"
    if not repo.is_dir():
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(pair("0.20.2", "0.21.0")), str(repo)], check=True
        )
    text = _git(repo, "show", f"head:{path}") + "\n"
    assert text.count(old) == 1, f"{path} at 0.21.0 no longer has {old!r} once"
    blob = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
        input=text.replace(old, new), check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    env = {**os.environ, "GIT_INDEX_FILE": str(out / f"{case}.index")}
    env |= {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
            for what, value in (("NAME", "audit"), ("EMAIL", "audit@example.com"))}  # fmt: skip
    _git(repo, "read-tree", "head", env=env)
    mode = _git(repo, "ls-tree", "head", path).split()[0]
    _git(repo, "update-index", "--cacheinfo", f"{mode},{blob},{path}", env=env)
    tree = _git(repo, "write-tree", env=env)
    commit = _git(repo, "commit-tree", tree, "-p", "head", "-m", message, env=env)
    _git(repo, "branch", "-f", "base", "head")
    _git(repo, "branch", "-f", "pr", commit)
    return repo, "base", "pr"


def _case(case: str, out: Path) -> tuple[Path, str, str]:
    if case == "a":
        return tokenspeed_pair(), "base", "head"
    if case == "b":
        return pair("0.20.2", "0.21.0"), "base", "head"
    if case == "c":
        return pair("0.27.1", "0.33.0"), "base", "head"
    return _edited(case, out)


def _clauses(requirement: str) -> set[str]:
    text = requirement.split("#")[0].split(";")[0]
    text = re.sub(r"^\s*[A-Za-z0-9_.\-]+(\[[^\]]*\])?", "", text)
    return {c.replace(" ", "") for c in text.split(",") if c.strip()}


def _name(requirement: str) -> str:
    found = re.match(r"\s*([A-Za-z0-9_.\-]+)", requirement)
    return re.sub(r"[-_.]+", "-", found.group(1)).lower() if found else ""


def _line(repo: Path, revision: str, path: str, number: str, files: dict) -> str:
    if (revision, path) not in files:
        shown = subprocess.run(
            ["git", "-C", str(repo), "show", f"{revision}:{path}"], capture_output=True, text=True
        )
        files[revision, path] = shown.stdout.splitlines() if shown.returncode == 0 else []
    lines = files[revision, path]
    return lines[int(number) - 1] if int(number) <= len(lines) else ""


def check_requirement_lines(markdown: str, repo: Path, base: str, head: str) -> dict:
    """Each requirement line shown: does the cited line name the package, and is the
    specifier shown the cited line's (not one merged with another file's)?"""
    files: dict[tuple[str, str], list[str]] = {}
    located = misplaced = as_cited = merged = 0
    examples: list[str] = []
    for match in REQUIREMENT_LINE.finditer(markdown.replace("\\_", "_")):
        kind, first, second, path, number, merged_with = match.groups()
        line = _line(repo, base if kind == "removed" else head, path, number, files)
        requirement = second or first
        if _name(line) != _name(requirement):
            misplaced += 1
            examples.append(f"not at the cited line: {match.group(0)}")
            continue
        located += 1
        if kind == "removed" or "@" in line:
            continue
        cited = _clauses(line)
        for other in re.findall(r"`([^`:]+):(\d+)`", merged_with or ""):
            cited |= _clauses(_line(repo, head, *other, files))
        if cited == _clauses(requirement):
            as_cited += 1
        else:
            merged += 1
            examples.append(f"{path}:{number} reads `{line.strip()}`; shown `{requirement}`")
    return {"located": located, "misplaced": misplaced, "as_cited": as_cited,
            "merged": merged, "examples": examples}  # fmt: skip


GENERATOR = "docs/mkdocs/gen_files/generate_attention_backends.py"
STAND_IN = ROOT / "bot" / "gendocs" / "mkdocs_stand_in.py"
PREVIEW = re.compile(r"^- `(table-[a-z0-9-]+)` · ([A-Z0-9_]+)(?::| ·) (.*)$", re.M)


def _generated_rows(repo: Path, revision: str) -> dict[tuple[str, str], dict[str, str]]:
    """(block, backend) -> {column: cell} as vLLM's generator writes them at ``revision``."""
    with tempfile.TemporaryDirectory() as work:
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", revision, "vllm", "docs"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(work, filter="data")
        result = Path(work) / "result.json"
        subprocess.run(
            [sys.executable, "-I", "-S", str(STAND_IN), GENERATOR, str(result)],
            cwd=work, check=True, capture_output=True, timeout=600,
        )  # fmt: skip
        blocks = json.loads(result.read_text())["blocks"].get("design/attention_backends.md", {})
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for block, text in blocks.items():
        lines = [line for line in text.splitlines() if line.startswith("|")]
        if len(lines) < 3:
            continue
        header = [cell.strip() for cell in lines[0].strip("|").split("|")]
        for line in lines[2:]:
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            name = next((re.sub(r"[^A-Z0-9_]", "", c) for c in cells if c.startswith("`")), "")
            rows[block, name] = dict(zip(header, cells, strict=False))
    return rows


def check_previews(markdown: str, repo: Path, base: str, head: str) -> tuple[int, list[str]]:
    """Each preview shown against the generators' rows: a new row's cells as the head's
    generator writes them (and no such row at base); a change's two values in the base's and
    the head's rows (a long value is cut, with ellipses, where it starts to differ)."""
    before, after = _generated_rows(repo, base), _generated_rows(repo, head)

    def plain(text: str) -> str:
        return text.replace("`", "").strip("…").strip()

    matched, differing = 0, []
    for match in PREVIEW.finditer(markdown.replace("\\_", "_").replace("\\.", ".")):
        block, name, rest = match.groups()
        if rest.startswith("new row: "):
            row = after.get((block, name), {})
            good = bool(row) and (block, name) not in before
            for part in rest.removeprefix("new row: ").split(" · "):
                column, _, value = part.partition(": ")
                good = good and plain(row.get(column, "")) == plain(value)
        else:
            column, _, change = rest.partition(": ")
            old, _, new = change.partition(" → ")
            was = before.get((block, name), {}).get(column, "")
            now = after.get((block, name), {}).get(column, "")
            good = plain(old) in plain(was) and plain(new) in plain(now) and was != now
        matched += good
        if not good:
            differing.append(match.group(0))
    return matched, differing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=list("abcde"), choices=list("abcde"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/audit"))
    args = parser.parse_args()
    reports = args.out / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    for case in args.cases:
        repo, base, head = _case(case, args.out)
        command = ["uv", "run", "prbot", "check", "--repo", str(repo), "--base", base,
                   "--head", head]  # fmt: skip
        env = {**os.environ, "PRBOT_DATA_DIR": str(args.out / "data")}
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            print(f"{case}: prbot check exited {done.returncode}: {done.stderr.strip()[-300:]}")
            return 1
        (reports / f"{case}.md").write_text(done.stdout)
        figures = check_requirement_lines(done.stdout, repo, base, head)
        print(
            f"{case}: {reports / f'{case}.md'}; requirement lines: {figures['located']} at the "
            f"cited line ({figures['misplaced']} not), specifiers {figures['as_cited']} as "
            f"cited, {figures['merged']} merged with another file's"
        )
        for example in figures["examples"]:
            print(f"  {example}")
        if case == "c":
            matched, differing = check_previews(done.stdout, repo, base, head)
            print(f"  generated-content previews: {matched} as vLLM's generators write them")
            for line in differing:
                print(f"  differs: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
