"""Ready patches: whatever the files' last lines look like, ``git apply`` takes them."""

from __future__ import annotations

import subprocess

import pytest

from bot.gendocs.patch import unified_patch

CASES = {
    "both end with a newline": ("a\nb\nc\n", "a\nB\nc\n"),
    "neither ends with a newline": ("a\nb\nc", "a\nb\nC"),
    "the newline is added": ("a\nb", "a\nb\n"),
    "the newline is dropped": ("a\nb\n", "a\nb"),
    "a file created": ("", "x\ny"),
}


@pytest.mark.parametrize("name", CASES)
def test_git_apply_takes_the_patch(tmp_path, name):
    old, new = CASES[name]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    target = tmp_path / "docs/gen.md"
    target.parent.mkdir()
    target.write_text(old)
    patch = unified_patch("docs/gen.md", old, new)
    applied = subprocess.run(
        ["git", "apply", "-"], cwd=tmp_path, input=patch, text=True, capture_output=True
    )
    assert applied.returncode == 0, applied.stderr + patch
    assert target.read_text() == new


def test_equal_texts_give_no_patch():
    assert unified_patch("x.md", "same\n", "same\n") == ""
