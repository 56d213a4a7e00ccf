"""Path globs: the rules' meaning, matched in time linear in the path, and long paths bounded."""

from __future__ import annotations

import re
import subprocess

import pytest

from bot.core.globs import MAX_PATH_CHARS, path_matches
from bot.core.snapshot import diff_files


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("vllm/v1/attention/backends/flash.py", "vllm/v1/attention/**", True),
        ("vllm", "vllm/**", False),  # "x/**" is "x/" and then anything
        ("vllm/", "vllm/**", True),
        ("README.md", "**/*.md", True),
        ("docs/a/b.md", "**/*.md", True),
        ("docs/a/b.md", "docs/**.md", True),  # "**" inside a segment spans directories too
        ("vllm/x.py", "*.py", False),
        ("a/b/c", "a/?/c", True),
        ("a/bb/c", "a/?/c", False),
        ("x/y", "x/**/y", True),
        ("x/p/q/y", "x/**/**/y", True),
        ("tests/a/test_x.py", "**/test_*.py", True),
        ("anything/at/all", "**", True),
        ("", "**", True),
        ("docs/a/b.md", "docs/", True),
    ],
)
def test_globs_mean_what_the_rules_say(path, pattern, expected):
    assert path_matches(path, pattern) is expected


def _one_regex(pattern: str) -> re.Pattern[str]:
    # The reading before: one regex over the whole path (quadratic on long paths).
    regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
    return re.compile(regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]"))


def test_segment_matching_agrees_with_the_one_regex_reading():
    patterns = ["**/*.py", "vllm/**", "a/**/b/*.py", "*.md", "a/?/c", "x/**/y/**", "**/**", "a*/b"]
    segments = ["a", "b", "c", "x", "y", "vllm", "z.py", "q.md", "", "ab"]
    paths = [
        "/".join(segments[(seed >> (3 * k)) % len(segments)] for k in range(1 + seed % 5))
        for seed in range(2_000)
    ]
    for pattern in patterns:
        for path in paths:
            expected = _one_regex(pattern).fullmatch(path) is not None
            assert path_matches(path, pattern) is expected, (pattern, path)


def test_long_paths_are_answered_and_bounded():
    # The one-regex reading backtracks quadratically where a pattern has two "**" or two "*"
    # in a segment: 16,000 characters took 2.3 s for one pattern, and one 1 MB path 187 s of
    # CPU per report (issue 21, item 9). Segment by segment it is linear, and bounded.
    deep = "a/" + "b/" * 2_000 + "x"
    assert len(deep) <= MAX_PATH_CHARS
    assert not path_matches(deep, "a/**/b/**/c") and path_matches(deep + "/c", "a/**/b/**/c")
    assert path_matches(deep + ".md", "**/b/**/*.md")
    huge = "a/" + "b/" * 500_000 + "x"
    wide = "a_" * 500_000 + ".pyc"
    for path in (huge, wide, "a" * (MAX_PATH_CHARS + 1)):
        for pattern in ("a/**/b/**/c", "**/b/**/*.md", "**/*_*.py", "**"):
            assert not path_matches(path, pattern)


def test_a_changed_file_past_the_path_bound_says_so(tmp_path):
    def git(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["git", "-C", str(tmp_path), *args], input=stdin, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "b")
    blob = git("hash-object", "-w", "--stdin", stdin="x = 1\n")
    # No file system holds this path; git's index and trees do, so a PR can push it.
    long_path = "/".join(["d" * 200] * 30) + "/x.py"
    git("update-index", "--add", "--cacheinfo", f"100644,{blob},{long_path}")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "long")
    [changed] = diff_files(tmp_path, "HEAD~1", "HEAD")
    assert changed.path == long_path and changed.patch is None
    assert changed.patch_omitted == (
        f"has a path of {len(long_path):,} characters, over the 4,096 limit (Linux's "
        "PATH_MAX); it matches no rule and its lines are not read"
    )
