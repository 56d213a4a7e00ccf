"""Everything a check may read about one PR head, built without REST calls.

A :class:`Snapshot` holds the PR's metadata, its changed files with patches, and readers
for any file at the base or the head. Server mode builds it from the webhook payload plus a
local git mirror; CLI mode builds it from a local checkout. Checks see the same thing.
"""

from __future__ import annotations

import re
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bot.core.gitdiff import LineCounts, file_patches, hunks_of, numstat_counts, raw_entries
from bot.core.globs import MAX_PATH_CHARS, path_matches
from bot.core.limits import InputRejected
from bot.local.git import BlobReader, BlobTooLarge, resolve, run_git

# A patch larger than this is dropped, as GitHub drops it from its API.
MAX_PATCH_BYTES = 1_000_000
# No single file a check reads from a tree may be larger: a PR controls every file's size,
# and one 75 MB module once took a check to gigabytes. This sits above every per-parser
# limit in bot/core/limits.py (4 MB at most) and above the largest file in real vLLM release
# trees (a 7.3 MB HTML asset), so the parsers still name their own, tighter limit.
MAX_TREE_FILE_BYTES = 8_000_000


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def too_large(path: str, size: int, limit: int = MAX_TREE_FILE_BYTES) -> InputRejected:
    """The finding for a file over the reader's bound, naming the file, its size and the limit."""
    return InputRejected(
        path, f"is {_megabytes(size)}, over the {_megabytes(limit)} limit for one file; not read"
    )


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


@dataclass(frozen=True)
class ChangedFile:
    """One file of the PR diff, shaped like GitHub's ``pulls/N/files`` entries."""

    path: str
    status: str = "modified"  # added | modified | removed | renamed | copied
    previous_path: str | None = None
    additions: int = 0
    deletions: int = 0
    patch: str | None = None  # hunks starting at "@@"; None when binary or too large
    binary: bool = False
    # Why a text file has no patch (over MAX_PATCH_BYTES): its lines cannot be read, and a
    # check that needs them must say so rather than see a file with nothing added.
    patch_omitted: str | None = None

    def hunks(self) -> list[Hunk]:
        if not self.patch:
            return []
        found = []
        for line in self.patch.splitlines():
            match = _HUNK_HEADER.match(line)
            if match:
                a, b, c, d = match.groups()
                found.append(Hunk(int(a), int(b or 1), int(c), int(d or 1)))
        return found

    def added_lines(self) -> list[tuple[int, str]]:
        """(line number in the head file, text) for every added line."""
        return self._side_lines("+")

    def removed_lines(self) -> list[tuple[int, str]]:
        """(line number in the base file, text) for every removed line."""
        return self._side_lines("-")

    def _side_lines(self, sign: str) -> list[tuple[int, str]]:
        if self.patch is None and self.patch_omitted:
            raise InputRejected(self.path, self.patch_omitted)
        if not self.patch:
            return []
        out: list[tuple[int, str]] = []
        old = new = 0
        for line in self.patch.splitlines():
            match = _HUNK_HEADER.match(line)
            if match:
                old, new = int(match.group(1)), int(match.group(3))
                continue
            if line.startswith("\\"):
                continue
            tag, text = line[:1], line[1:]
            if tag == "+":
                if sign == "+":
                    out.append((new, text))
                new += 1
            elif tag == "-":
                if sign == "-":
                    out.append((old, text))
                old += 1
            else:
                old += 1
                new += 1
        return out


class TreeReader(Protocol):
    """Read-only view of one revision of the repository (or a working directory)."""

    label: str
    # What names this content for ever (a commit SHA), so results over it may be cached by
    # it; None for a tree that can change under the reader (a working directory).
    cache_identity: str | None

    def read_bytes(self, path: str) -> bytes | None: ...

    def read_text(self, path: str) -> str | None: ...

    def exists(self, path: str) -> bool: ...

    def list_paths(self, prefix: str = "") -> list[str]: ...

    def export(self, dest: Path, paths: list[str] | None = None) -> Path: ...


def _decode(data: bytes | None) -> str | None:
    if data is None:
        return None
    return data.decode("utf-8", "replace")


class GitTree:
    """One commit of a git repository, read through ``git cat-file --batch``."""

    def __init__(self, repo: Path | str, sha: str, reader: BlobReader | None = None) -> None:
        self.repo = Path(repo)
        self.sha = sha
        self.label = sha[:12]
        self.cache_identity: str | None = sha
        self._reader = reader or BlobReader(self.repo)
        self._paths: list[str] | None = None

    def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, None when absent; :class:`InputRejected` over the size bound."""
        try:
            return self._reader.read(f"{self.sha}:{path.lstrip('/')}", limit=MAX_TREE_FILE_BYTES)
        except BlobTooLarge as exc:
            raise too_large(path, exc.size) from None

    def read_text(self, path: str) -> str | None:
        return _decode(self.read_bytes(path))

    def close(self) -> None:
        """Stop the ``git cat-file`` process behind this tree (shared readers too)."""
        self._reader.close()

    def exists(self, path: str) -> bool:
        path = path.strip("/")
        paths = self.list_paths()
        return path in set(paths) or any(p.startswith(path + "/") for p in paths)

    def list_paths(self, prefix: str = "") -> list[str]:
        if self._paths is None:
            raw = run_git(self.repo, ["ls-tree", "-r", "-z", "--name-only", self.sha])
            self._paths = [p for p in raw.decode("utf-8", "replace").split("\0") if p]
        return [p for p in self._paths if p.startswith(prefix)]

    def export(self, dest: Path, paths: list[str] | None = None) -> Path:
        """Write the tree (or some paths of it) into ``dest`` with ``git archive``."""
        dest.mkdir(parents=True, exist_ok=True)
        wanted = [p for p in (paths or []) if self.exists(p)]
        if paths is not None and not wanted:
            return dest
        # The archive goes to a file, not through this process's memory: a tree holds files
        # of any size the PR chose (a sandboxed tool may need them, so none is left out).
        with tempfile.TemporaryDirectory(prefix="prbot-export-") as scratch:
            archive = Path(scratch) / "tree.tar"
            run_git(
                self.repo,
                ["archive", "--format=tar", "-o", str(archive), self.sha, "--", *wanted],
            )
            with tarfile.open(archive) as tar:
                tar.extractall(dest, filter="data")
        return dest


class DirTree:
    """A working directory, for ``prbot docs`` and other commands that edit files in place."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).resolve()
        self.label = str(self.root)
        self.cache_identity: str | None = None

    def _safe(self, path: str) -> Path | None:
        candidate = (self.root / path.lstrip("/")).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            return None
        return candidate

    def read_bytes(self, path: str) -> bytes | None:
        target = self._safe(path)
        if target is None or not target.is_file():
            return None
        size = target.stat().st_size
        if size > MAX_TREE_FILE_BYTES:
            raise too_large(path, size)
        with target.open("rb") as handle:  # bounded even if the file grows meanwhile
            data = handle.read(MAX_TREE_FILE_BYTES + 1)
        if len(data) > MAX_TREE_FILE_BYTES:
            raise too_large(path, len(data))
        return data

    def read_text(self, path: str) -> str | None:
        return _decode(self.read_bytes(path))

    def exists(self, path: str) -> bool:
        target = self._safe(path)
        return target is not None and target.exists()

    def list_paths(self, prefix: str = "") -> list[str]:
        out = []
        for item in self.root.rglob("*"):
            if ".git" in item.relative_to(self.root).parts or not item.is_file():
                continue
            rel = item.relative_to(self.root).as_posix()
            if rel.startswith(prefix):
                out.append(rel)
        return sorted(out)

    def export(self, dest: Path, paths: list[str] | None = None) -> Path:
        import shutil

        dest.mkdir(parents=True, exist_ok=True)
        for rel in paths if paths is not None else self.list_paths():
            source = self._safe(rel)
            if source is None or not source.exists():
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            # Links are copied as links: a link in the tree must not pull in files from outside.
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
            else:
                shutil.copy2(source, target, follow_symlinks=False)
        return dest


@dataclass(frozen=True)
class Snapshot:
    """One PR head as the checks see it. Immutable: what a check reads (trust included) is
    decided before it is built (bot/report/runner.py), and no check can change it for the next."""

    repo: str
    base_sha: str
    head_sha: str
    base: TreeReader
    head: TreeReader
    files: list[ChangedFile] = field(default_factory=list)
    number: int | None = None
    title: str = ""
    body: str = ""
    author: str = ""
    author_association: str = "NONE"
    trusted: bool = False
    created_at: str | None = None

    def close(self) -> None:
        """Stop the git reader processes behind the trees (a no-op for directories)."""
        for tree in (self.base, self.head):
            close = getattr(tree, "close", None)
            if close is not None:
                close()

    @property
    def changed_paths(self) -> list[str]:
        return [f.path for f in self.files]

    def touches(self, patterns: list[str]) -> list[str]:
        """Changed paths (old or new name) matching any glob pattern (``**`` allowed)."""
        hits = []
        for changed in self.files:
            names = [changed.path] + ([changed.previous_path] if changed.previous_path else [])
            if any(path_matches(name, pattern) for name in names for pattern in patterns):
                hits.append(changed.path)
        return hits


_STATUS = {
    "A": "added",
    "M": "modified",
    "D": "removed",
    "R": "renamed",
    "C": "copied",
    "T": "modified",
}


def diff_files(repo: Path | str, base_sha: str, head_sha: str) -> list[ChangedFile]:
    """The PR diff as GitHub shows it: merge-base of base and head against head."""
    spec = f"{base_sha}...{head_sha}"
    raw = run_git(repo, ["diff", "--raw", "-z", "-M", "--no-abbrev", spec]).decode(
        "utf-8", "replace"
    )
    numstat = run_git(repo, ["diff", "--numstat", "-z", "-M", spec]).decode("utf-8", "replace")
    # git shows files over the threshold as binary, so a huge file never reaches this
    # process as text (the whole diff is held in memory); numstat above still counts its lines.
    patch_text = run_git(
        repo,
        [
            "-c",
            f"core.bigFileThreshold={MAX_TREE_FILE_BYTES}",
            "diff",
            "-M",
            "--no-color",
            "--no-ext-diff",
            spec,
        ],
    )

    entries = raw_entries(raw)
    line_counts = numstat_counts(numstat)
    chunks = file_patches(patch_text)

    files = []
    # git writes --raw and the patch in the same order, one entry per file.
    for entry, chunk in zip_longest(entries, chunks[: len(entries)]):
        counts = line_counts.get(entry.path, LineCounts())
        patch = omitted = None
        hunks = hunks_of(chunk) if chunk is not None and not counts.binary else None
        if hunks is not None and len(chunk) <= MAX_PATCH_BYTES:
            patch = hunks.decode("utf-8", "replace").rstrip("\n")
        elif hunks is not None:
            omitted = (
                f"has a diff of {_megabytes(len(chunk))}, over the "
                f"{_megabytes(MAX_PATCH_BYTES)} limit for one file's diff; its lines not read"
            )
        elif chunk is not None and not counts.binary and b"\nBinary files " in chunk:
            # text by numstat, binary in the patch: over the big-file threshold
            omitted = (
                f"is over the {_megabytes(MAX_TREE_FILE_BYTES)} limit for one file; "
                "its diff not read"
            )
        if len(entry.path) > MAX_PATH_CHARS:
            patch, omitted = (
                None,
                (
                    f"has a path of {len(entry.path):,} characters, over the {MAX_PATH_CHARS:,} "
                    "limit (Linux's PATH_MAX); it matches no rule and its lines are not read"
                ),
            )
        files.append(
            ChangedFile(
                path=entry.path,
                status=_STATUS.get(entry.letter, "modified"),
                previous_path=entry.previous_path,
                additions=counts.added,
                deletions=counts.deleted,
                patch=patch,
                binary=counts.binary,
                patch_omitted=omitted,
            )
        )
    return files


def snapshot_from_checkout(
    repo_dir: Path | str,
    base: str,
    head: str,
    *,
    trusted: bool,
    repo_name: str | None = None,
) -> Snapshot:
    """CLI mode: a snapshot of ``base..head`` in a local checkout. ``trusted`` is the
    caller's decision (``bot.report.runner.decide_trust``)."""
    repo_dir = Path(repo_dir).resolve()
    base_sha = resolve(repo_dir, base)
    head_sha = resolve(repo_dir, head)
    reader = BlobReader(repo_dir)
    subject = run_git(repo_dir, ["log", "-1", "--format=%s%x00%b%x00%an", head_sha]).decode(
        "utf-8", "replace"
    )
    title, body, author = (subject.split("\0") + ["", "", ""])[:3]
    return Snapshot(
        repo=repo_name or repo_dir.name,
        base_sha=base_sha,
        head_sha=head_sha,
        base=GitTree(repo_dir, base_sha, reader),
        head=GitTree(repo_dir, head_sha, reader),
        files=diff_files(repo_dir, base_sha, head_sha),
        title=title.strip(),
        body=body.strip(),
        author=author.strip(),
        author_association="OWNER",
        trusted=trusted,
    )


_Rules = TypeVar("_Rules")


def snapshot_from_pull(
    repo_dir: Path | str,
    repo: str,
    pull: dict[str, Any],
    *,
    rules_from: Callable[[TreeReader], _Rules],
    trusted_by: Callable[[_Rules], bool],
) -> tuple[Snapshot, _Rules]:
    """Server and ``check --pr`` mode: a PR (``bot.github.pulls.pull_summary`` fields) whose base
    and
    head are in the mirror at ``repo_dir``. The rules are read from the base first, so the
    snapshot is built with the trust they give already decided."""
    reader = BlobReader(Path(repo_dir))
    base = GitTree(repo_dir, pull["base_sha"], reader)
    rules = rules_from(base)
    snapshot = Snapshot(
        repo=repo,
        base_sha=pull["base_sha"],
        head_sha=pull["head_sha"],
        base=base,
        head=GitTree(repo_dir, pull["head_sha"], reader),
        files=diff_files(repo_dir, pull["base_sha"], pull["head_sha"]),
        number=pull["number"],
        title=pull["title"],
        body=pull["body"],
        author=pull["author"],
        author_association=pull["author_association"],
        trusted=trusted_by(rules),
        created_at=pull.get("created_at"),
    )
    return snapshot, rules
