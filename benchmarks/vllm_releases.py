"""Real vLLM release trees for the by-hand benchmarks: downloaded on demand, never committed.

    uv run python benchmarks/vllm_releases.py 0.20.2 0.21.0 0.33.0   # fetch and unpack
    uv run python benchmarks/vllm_releases.py --list                  # what is cached

vLLM's source distributions on PyPI (``vllm-X.Y.Z.tar.gz``) carry the whole repository tree
(``.buildkite/``, ``docs/``, ``tools/``, ``requirements/``, ``benchmarks/``). pip prepares an
sdist's metadata before it keeps the file, and vLLM's ``setup.py`` imports torch for that, so
a permissive stand-in ``torch`` package (written to a temp dir, on ``PYTHONPATH`` of that one
pip call) is enough; nothing of vLLM is built or run.

Everything lands under ``$PRBOT_BENCH_CACHE`` (default ``~/.cache/prbot-bench``):
``sdists/vllm-X.tar.gz``, ``trees/vllm-X/`` (unpacked, read-only by convention) and
``pairs/A..B/`` (a git repository whose ``base`` and ``head`` branches are the two trees, for
``prbot check --base base --head head``).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("PRBOT_BENCH_CACHE", Path.home() / ".cache" / "prbot-bench"))

# The generator of docs/design/attention_backends.md exists from 0.17 on; these span its life
# up to the newest release on PyPI when this list was written. Scripts take their own lists.
DEFAULT_RELEASES = ["0.18.0", "0.20.2", "0.21.0", "0.23.0", "0.26.0", "0.30.0", "0.33.0"]

_STAND_IN_TORCH = '''
"""Stand-in torch: every attribute and submodule exists, so setup.py can compute metadata."""
import importlib.abc, importlib.machinery, sys, types
__version__ = "2.9.0"
class _Any:
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return _Any()
    def __getattr__(self, name): return _Any()
    def __iter__(self): return iter(())
    def __bool__(self): return False
    def __str__(self): return ""
    def __fspath__(self): return ""
class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"): raise AttributeError(name)
        return _Any()
class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.startswith("torch."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        module = _Module(spec.name); module.__path__ = []; return module
    def exec_module(self, module): pass
sys.meta_path.insert(0, _Finder())
def __getattr__(name):
    if name.startswith("__"): raise AttributeError(name)
    return _Any()
'''

_SDIST_URL = re.compile(r"https://\S+/vllm-(?P<version>[0-9][^/\s]*)\.tar\.gz")


class ReleaseError(RuntimeError):
    """A release could not be downloaded or unpacked (one line, for the scripts' output)."""


# What vLLM's setup.py needs to compute metadata without build isolation (isolation would
# install the real torch, several GB).
_BUILD_TOOLS = ["pip", "setuptools>=77", "setuptools_scm", "setuptools-rust", "wheel", "jinja2"]


def _pip_python() -> Path:
    """A venv of the cache's own with pip and vLLM's metadata-time build tools."""
    venv = CACHE / "pip-env"
    python = venv / "bin" / "python"
    if not (venv / ".ready").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-U", *_BUILD_TOOLS],
            check=True,
            timeout=900,
        )
        (venv / ".ready").touch()
    return python


def _pip(args: list[str], torch_dir: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(torch_dir), VLLM_TARGET_DEVICE="empty")
    return subprocess.run(
        [str(_pip_python()), "-m", "pip", "download", "--no-deps", "--no-build-isolation", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def sdist(version: str) -> Path:
    """The release's sdist, downloaded once.

    With ``VLLM_TARGET_DEVICE=empty`` the metadata says ``X+empty``, which pip refuses for
    ``vllm==X``; the refusal names the file's URL, and a download by URL checks no version.
    """
    target = CACHE / "sdists" / f"vllm-{version}.tar.gz"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        torch_dir = Path(scratch) / "stand-in"
        (torch_dir / "torch").mkdir(parents=True)
        (torch_dir / "torch" / "__init__.py").write_text(_STAND_IN_TORCH)
        download = Path(scratch) / "download"
        probe = _pip(["--no-binary", ":all:", f"vllm=={version}", "-d", str(download)], torch_dir)
        urls = [
            m.group(0)
            for m in _SDIST_URL.finditer(probe.stdout + probe.stderr)
            if m.group("version") == version
        ]
        if not urls:
            raise ReleaseError(f"vllm {version}: pip named no sdist (is the version on PyPI?)")
        fetched = _pip([urls[0], "-d", str(download)], torch_dir)
        found = sorted(download.glob(f"vllm-{version}.tar.gz"))
        if not found:
            last = (fetched.stderr.strip().splitlines() or ["no output"])[-1]
            raise ReleaseError(f"vllm {version}: download failed: {last}")
        shutil.move(str(found[0]), target)
    return target


def tree(version: str) -> Path:
    """The release's unpacked source tree (``.../trees/vllm-X``)."""
    target = CACHE / "trees" / f"vllm-{version}"
    if (target / "vllm").is_dir():
        return target
    archive = sdist(version)
    staging = CACHE / "trees" / f".unpack-{version}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    (inner,) = list(staging.iterdir())
    shutil.rmtree(target, ignore_errors=True)
    inner.rename(target)
    staging.rmdir()
    return target


def _git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
    )
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _commit_tree(repo: Path, source: Path, branch: str) -> str:
    """Replace the work tree with ``source`` and commit it on ``branch``."""
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    shutil.copytree(source, repo, symlinks=True, dirs_exist_ok=True)
    for generated in ("PKG-INFO", "vllm.egg-info"):
        path = repo / generated
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    _git(repo, "add", "-A", "-f")
    _git(repo, "commit", "-q", "--allow-empty", "-m", f"{branch}: {source.name}")
    sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "branch", "-f", branch, sha)
    return sha


def pair(base: str, head: str) -> Path:
    """A git repository with branches ``base`` (release A) and ``head`` (release B on top).

    Several scripts may ask for the same pair at once; a lock file makes one build it.
    """
    target = CACHE / "pairs" / f"{base}..{head}"
    if (target / ".git").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{base}..{head}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".git").is_dir():
            return target
        return _build_pair(base, head, target)


def _build_pair(base: str, head: str, target: Path) -> Path:
    base_tree, head_tree = tree(base), tree(head)
    staging = CACHE / "pairs" / f".staging-{base}..{head}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _git(staging, "init", "-q", "-b", "work")
    _commit_tree(staging, base_tree, "base")
    _commit_tree(staging, head_tree, "head")
    _git(staging, "checkout", "-q", "head")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


# 0.21.0's prefill variant sits in a package (``mla/prefill/``) 0.20.2 does not have.
TOKENSPEED_FILES = ("vllm/v1/attention/backends/mla/tokenspeed_mla.py",)
_REGISTRY = "vllm/v1/attention/backends/registry.py"
_TOKENSPEED_ENTRY = (
    "    TOKENSPEED_MLA = (\n"
    '        "vllm.v1.attention.backends.mla.tokenspeed_mla.TokenspeedMLABackend"\n'
    "    )\n"
)


def tokenspeed_pair() -> Path:
    """0.20.2 as the base; the head is 0.20.2 plus the TOKENSPEED_MLA backend file of 0.21.0
    and its registry entry (placed after ``FLASHINFER_MLA``, as 0.21.0 has it): the PR that
    added the backend, without the rest of the release."""
    target = CACHE / "pairs" / "0.20.2+TOKENSPEED_MLA"
    if (target / ".git").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".0.20.2+TOKENSPEED_MLA.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".git").is_dir():
            return target
        base_tree, donor = tree("0.20.2"), tree("0.21.0")
        staging = CACHE / "pairs" / ".staging-0.20.2+TOKENSPEED_MLA"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        _git(staging, "init", "-q", "-b", "work")
        _commit_tree(staging, base_tree, "base")
        for path in TOKENSPEED_FILES:
            shutil.copyfile(donor / path, staging / path)
        registry = (staging / _REGISTRY).read_text()
        anchor = '"vllm.v1.attention.backends.mla.flashinfer_mla.FlashInferMLABackend"\n    )\n'
        if anchor not in registry or "TOKENSPEED_MLA" in registry:
            raise ReleaseError("0.20.2's attention registry is not as expected")
        (staging / _REGISTRY).write_text(registry.replace(anchor, anchor + _TOKENSPEED_ENTRY, 1))
        _git(staging, "add", "-A", "-f")
        _git(staging, "commit", "-q", "-m", "Add the TOKENSPEED_MLA attention backend")
        _git(staging, "branch", "-f", "head", _git(staging, "rev-parse", "HEAD"))
        _git(staging, "checkout", "-q", "head")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help=f"default: {' '.join(DEFAULT_RELEASES)}")
    parser.add_argument("--list", action="store_true", help="print the cached trees")
    parser.add_argument("--pairs", action="store_true", help="also build consecutive pairs")
    args = parser.parse_args(argv)
    if args.list:
        for path in sorted((CACHE / "trees").glob("vllm-*")):
            print(path)
        return 0
    versions = sorted(args.versions or DEFAULT_RELEASES, key=version_key)
    try:
        for version in versions:
            print(tree(version))
        if args.pairs:
            for base, head in zip(versions, versions[1:], strict=False):
                print(pair(base, head))
    except (ReleaseError, subprocess.CalledProcessError, OSError) as exc:
        print(f"vllm_releases: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
