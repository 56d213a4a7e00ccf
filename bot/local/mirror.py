"""A local bare mirror per repository, so snapshots read files and diffs without REST calls."""

from __future__ import annotations

import fcntl
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bot.local.git import GitError, auth_env, run_git

# Fetches go over the web transports only: a clone URL or a redirect can never make git
# read a local path (file://) or run a command (ext::, ssh's ProxyCommand).
FETCH_ENV = {"GIT_ALLOW_PROTOCOL": "https:http"}


# A file read straight from the mirror (the rules, before any snapshot exists) is small.
MAX_MIRROR_FILE_BYTES = 1_000_000
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


class StaleHead(RuntimeError):
    """The PR head this job was for is no longer fetchable (force-pushed away)."""


class RepoMirror:
    """The bare mirror of one repository under ``<data_dir>/mirrors``. Only this class knows
    where it keeps fetched branches and PR heads (``refs/prbot/...``)."""

    def __init__(self, root: Path, full_name: str, clone_url: str) -> None:
        owner, _, name = full_name.partition("/")
        self.full_name = full_name
        self.clone_url = clone_url
        self.path = Path(root) / "mirrors" / owner / f"{name}.git"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # Two workers fetching into one mirror would race on refs; a file lock orders them.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.parent / f".{self.path.name}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _ensure(self) -> None:
        if not (self.path / "HEAD").exists():
            self.path.mkdir(parents=True, exist_ok=True)
            run_git(self.path, ["init", "--bare", "-q"])
        # The clone URL comes from the (signature-verified) payload; keep it current.
        run_git(self.path, ["config", "remote.origin.url", self.clone_url])

    @staticmethod
    def _ref(ref: str) -> str:
        """A commit SHA as it is; a branch name as the ref it was fetched into."""
        return ref if _SHA.match(ref) else f"refs/prbot/heads/{ref}"

    def read_file(self, ref: str, path: str) -> bytes | None:
        """``path`` at ``ref`` (a commit SHA, or a branch fetched by :meth:`fetch_pull`);
        None when the mirror, the ref or the file is missing, or the file is too large to be
        what it claims (a rules file)."""
        if not (self.path / "HEAD").exists() or path.startswith(("/", "-")):
            return None
        spec = f"{self._ref(ref)}:{path}"
        try:
            size = int(run_git(self.path, ["cat-file", "-s", spec]).strip() or 0)
            if size > MAX_MIRROR_FILE_BYTES:
                return None
            return run_git(self.path, ["cat-file", "blob", spec])
        except (GitError, ValueError):
            return None

    def has_commit(self, sha: str) -> bool:
        try:
            run_git(self.path, ["cat-file", "-e", f"{sha}^{{commit}}"])
            return True
        except GitError:
            return False

    def fetch_pull(
        self, token: str | None, number: int, base_ref: str, base_sha: str, head_sha: str
    ) -> None:
        """Make sure base and head commits of PR ``number`` are in the mirror."""
        with self._locked():
            self._ensure()
            if self.has_commit(head_sha) and self.has_commit(base_sha):
                return
            refspecs = [
                f"+refs/pull/{number}/head:refs/prbot/pull/{number}/head",
                f"+refs/heads/{base_ref}:refs/prbot/heads/{base_ref}",
            ]
            run_git(
                self.path,
                ["fetch", "--quiet", "--no-tags", "origin", *refspecs],
                env={**auth_env(token), **FETCH_ENV},
            )
            missing = [sha for sha in (head_sha, base_sha) if not self.has_commit(sha)]
            if missing:
                # The branch moved on; GitHub serves reachable SHAs directly, so ask for them.
                try:
                    run_git(
                        self.path,
                        ["fetch", "--quiet", "--no-tags", "origin", *missing],
                        env={**auth_env(token), **FETCH_ENV},
                    )
                except GitError as exc:
                    raise StaleHead(
                        f"{self.full_name}#{number}: {', '.join(missing)} not fetchable: {exc}"
                    ) from exc
