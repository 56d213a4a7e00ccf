"""Write commits straight into a bare repository and read diffs back, as GitHub's storage would.

Commits are made with plumbing (a throwaway index, ``write-tree``, ``commit-tree``) so no work
tree is needed and pushes never race a checkout.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bot.local.git import GitError, run_git

# A fixed identity and no user config, so commits do not depend on the machine running them.
_BASE_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass(frozen=True)
class DiffEntry:
    """One file of a pull request's diff, in the shape GitHub's files endpoint reports."""

    filename: str
    status: str  # added | removed | modified | renamed
    additions: int
    deletions: int
    patch: str | None
    previous_filename: str | None = None

    @property
    def changes(self) -> int:
        return self.additions + self.deletions


class BareRepo:
    """A bare git repository on disk that the test server commits into and serves."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Every ref update goes through this object, so refs and commit counts can be cached
        # (a REST answer would otherwise spawn several git processes).
        self._refs: dict[str, str] = {}
        self._counts: dict[tuple[str, str], int] = {}

    def init(self, default_branch: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "--bare", "-b", default_branch)
        # GitHub lets clients fetch any commit reachable from a ref, e.g. a PR head by SHA.
        self.git("config", "uploadpack.allowReachableSHA1InWant", "true")
        # Pushes (prbot's autofix) are taken as GitHub takes them: from an authenticated
        # client, a fast-forward or not (git itself refuses a non-forced non-fast-forward).
        self.git("config", "http.receivepack", "true")

    def git(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
        return run_git(self.path, args, input=input, env={**_BASE_ENV, **(env or {})}).decode()

    def resolve(self, rev: str) -> str | None:
        """The commit SHA a ref or SHA names, or None when it names nothing."""
        if rev in self._refs:
            return self._refs[rev]
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        except GitError:
            return None

    def commit_files(
        self,
        branch: str,
        files: dict[str, str | None],
        *,
        message: str,
        author: str,
        parent: str | None,
    ) -> str:
        """Commit `files` (None deletes) on top of `parent` and point refs/heads/<branch> at it."""
        with tempfile.TemporaryDirectory(prefix="fakegh-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if parent:
                self.git("read-tree", parent, env=env)
            else:
                self.git("read-tree", "--empty", env=env)
            # --index-info takes every change in one call; mode 0 removes a path.
            lines = []
            for path, content in files.items():
                if content is None:
                    lines.append(f"0 {'0' * 40}\t{path}\n")
                    continue
                blob = self.git("hash-object", "-w", "--stdin", input=content.encode()).strip()
                lines.append(f"100644 {blob}\t{path}\n")
            self.git("update-index", "--index-info", input="".join(lines).encode(), env=env)
            tree = self.git("write-tree", env=env).strip()
        identity = {
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": f"{author}@users.noreply.github.com",
            "GIT_COMMITTER_NAME": "GitHub",
            "GIT_COMMITTER_EMAIL": "noreply@github.com",
        }
        parents = ["-p", parent] if parent else []
        sha = self.git("commit-tree", tree, *parents, "-m", message, env=identity).strip()
        self.set_ref(f"refs/heads/{branch}", sha)
        return sha

    def commit_info(self, sha: str) -> dict[str, str]:
        """Author, committer, tree, parents and message of one commit."""
        fields = ["sha", "tree", "parents", "an", "ae", "ad", "cn", "ce", "cd", "message"]
        fmt = "%x00".join(["%H", "%T", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%B"])
        out = self.git("log", "-1", f"--format={fmt}", sha)
        return dict(zip(fields, out.split("\0"), strict=True))

    def set_ref(self, ref: str, sha: str) -> None:
        self.git("update-ref", ref, sha)
        self._refs[ref] = sha

    def forget_refs(self) -> None:
        """Drop the ref cache after something outside this object (a push) moved refs."""
        self._refs.clear()

    def delete_ref(self, ref: str) -> None:
        self.git("update-ref", "-d", ref)
        self._refs.pop(ref, None)

    def merge_base(self, a: str, b: str) -> str:
        try:
            return self.git("merge-base", a, b).strip()
        except GitError:
            return a  # unrelated histories: GitHub would refuse the PR; diff against base

    def count_commits(self, base: str, head: str) -> int:
        if (base, head) not in self._counts:
            counted = self.git("rev-list", "--count", f"{base}..{head}").strip()
            self._counts[(base, head)] = int(counted or 0)
        return self._counts[(base, head)]

    def diff(self, base: str, head: str) -> list[DiffEntry]:
        """The files changed from merge-base(base, head) to head, as GitHub lists them."""
        start = self.merge_base(base, head)
        raw = self.git("diff", "-M", "--raw", "--numstat", "-z", "--no-abbrev", start, head)
        patches = _split_patches(
            self.git("diff", "-M", "--no-color", "--no-ext-diff", "-U3", start, head)
        )
        entries = _parse_raw_numstat(raw)
        return [
            DiffEntry(
                filename=path,
                status=status,
                additions=adds,
                deletions=dels,
                patch=patches[i] if i < len(patches) else None,
                previous_filename=old,
            )
            for i, (status, path, old, adds, dels) in enumerate(entries)
        ]


_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "T": "changed"}


def _parse_raw_numstat(raw: str) -> list[tuple[str, str, str | None, int, int]]:
    """Parse `git diff --raw --numstat -z`: all raw records first, then all numstat records."""
    tokens = raw.split("\0")
    records: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(tokens) and tokens[i].startswith(":"):
        letter = tokens[i].split()[-1][0]
        if letter in "RC":
            records.append((_STATUS.get(letter, "renamed"), tokens[i + 2], tokens[i + 1]))
            i += 3
        else:
            records.append((_STATUS.get(letter, "modified"), tokens[i + 1], None))
            i += 2
    counts: list[tuple[int, int]] = []
    while i < len(tokens) and tokens[i]:
        adds, dels, rest = tokens[i].split("\t", 2)
        # A rename's numstat record has an empty path followed by the old and new names.
        i += 3 if rest == "" else 1
        counts.append((int(adds) if adds != "-" else 0, int(dels) if dels != "-" else 0))
    return [
        (status, path, old, *(counts[n] if n < len(counts) else (0, 0)))
        for n, (status, path, old) in enumerate(records)
    ]


def _split_patches(text: str) -> list[str | None]:
    """One entry per `diff --git` block: the hunks only (GitHub's `patch`), None for binaries."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("diff --git "):
            blocks.append([])
        elif blocks:
            blocks[-1].append(line)
    patches: list[str | None] = []
    for block in blocks:
        start = next((n for n, line in enumerate(block) if line.startswith("@@")), None)
        patches.append(None if start is None else "\n".join(block[start:]))
    return patches
