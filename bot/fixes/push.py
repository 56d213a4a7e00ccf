"""The git edge of autofix: one commit from the report's patches, pushed without force.

The commit is built in the repository's bare mirror with a throwaway index (``read-tree`` of
the head, ``git apply --cached`` of each patch, ``write-tree``, ``commit-tree``), so no work
tree is checked out and no PR code runs. Its dates come from the caller, so building it again
after a crash gives the same SHA, and pushing that again is a no-op: a replayed job never
adds a second commit. The push is a plain fast-forward of the PR's branch; if the branch
moved, git refuses it (no ``+``, no ``--force``). The token travels in an HTTP header set
through the environment, never on the command line or in a URL.
"""

from __future__ import annotations

import subprocess
import tempfile
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

from bot.fixes.plan import FilePatch
from bot.local.childenv import allowlisted_environment
from bot.local.git import GIT_BASE_ENV, GitError, auth_env, run_git
from bot.local.mirror import FETCH_ENV

PUSH_TIMEOUT = 120.0


class PushRefused(RuntimeError):
    """The push cannot succeed as asked (the branch moved, no permission); ``str()`` says why
    in words for the person who asked. Retrying would not help."""


def same_host(push_url: str, clone_url: str) -> bool:
    """Whether ``push_url`` is on the host (scheme and port too) the repository lives on.
    A PR's head repository is GitHub's to name, but prbot never sends its token elsewhere."""
    a, b = urllib.parse.urlsplit(push_url), urllib.parse.urlsplit(clone_url)
    return (
        a.scheme in ("https", "http")
        and (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)
        and not a.username
        and not a.password
    )


def build_commit(
    mirror: Path,
    head_sha: str,
    patches: Sequence[FilePatch],
    message: str,
    *,
    author: tuple[str, str],
    timestamp: int,
) -> str:
    """The fix commit on top of ``head_sha`` (which must be in the mirror); its SHA.

    Raises :class:`PushRefused` when a patch does not apply to that head.
    """
    name, email = author
    date = f"@{timestamp} +0000"
    identity = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": date,
    }
    with tempfile.TemporaryDirectory(prefix="prbot-fix-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        run_git(mirror, ["read-tree", head_sha], env=env)
        for item in patches:
            try:
                run_git(
                    mirror,
                    ["apply", "--cached", "--whitespace=nowarn", "-"],
                    input=item.patch.encode(),
                    env=env,
                )
            except GitError as exc:
                raise PushRefused(f"the patch for {item.path} does not apply: {exc}") from None
        tree = run_git(mirror, ["write-tree"], env=env).decode().strip()
    head_tree = run_git(mirror, ["rev-parse", f"{head_sha}^{{tree}}"]).decode().strip()
    if tree == head_tree:
        raise PushRefused("the patches change nothing on this head")
    return (
        run_git(mirror, ["commit-tree", tree, "-p", head_sha], input=message.encode(), env=identity)
        .decode()
        .strip()
    )


def changed_paths(mirror: Path, head_sha: str, sha: str) -> list[str]:
    out = run_git(mirror, ["diff", "--name-only", "-z", head_sha, sha]).decode()
    return [p for p in out.split("\0") if p]


def push(mirror: Path, url: str, token: str | None, sha: str, branch: str) -> None:
    """Fast-forward ``branch`` at ``url`` to ``sha``. :class:`PushRefused` when git refuses
    (the branch moved on, no permission); :class:`GitError` for what a retry may cure."""
    try:
        run_git(mirror, ["check-ref-format", f"refs/heads/{branch}"])
    except GitError:
        raise PushRefused(f"the PR's branch name {branch[:80]!r} is not a valid ref") from None
    env = allowlisted_environment({**GIT_BASE_ENV, **auth_env(token), **FETCH_ENV})
    argv = ["git", "-C", str(mirror), "push", "--porcelain", url, f"{sha}:refs/heads/{branch}"]
    try:
        proc = subprocess.run(argv, capture_output=True, env=env, timeout=PUSH_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise GitError(f"git push timed out after {PUSH_TIMEOUT:.0f}s") from None
    if proc.returncode == 0:
        return
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if "[rejected]" in out or "non-fast-forward" in out or "fetch first" in out:
        raise PushRefused("the PR's branch moved while prbot pushed; nothing was pushed")
    if "[remote rejected]" in out:
        line = next(line for line in out.splitlines() if "[remote rejected]" in line)
        raise PushRefused(f"GitHub refused the push: {line.split('[remote rejected]')[-1].strip()}")
    lowered = err.lower()
    # 401 (a token GitHub does not take) shows as git wanting a user name it may not ask for.
    refusals = ("403", "401", "permission", "not found", "denied", "could not read username")
    if any(word in lowered for word in refusals):
        raise PushRefused("GitHub did not let prbot push to the PR's branch")
    last = err.strip().splitlines()[-1] if err.strip() else "failed"
    raise GitError(f"git push: {last}")
