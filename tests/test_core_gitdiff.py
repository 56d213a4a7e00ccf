"""git diff's three outputs, parsed on their own (bot/core/gitdiff.py), on what real git writes
for every kind of change, and on output cut short."""

from __future__ import annotations

import os

from bot.core.gitdiff import (
    LineCounts,
    RawEntry,
    file_patches,
    hunks_of,
    numstat_counts,
    raw_entries,
)
from bot.core.snapshot import diff_files
from bot.local.git import run_git

ODD = 'odd\tname\nwith quote".py'


def _every_kind_of_change(git_repo) -> tuple[str, str]:
    base = git_repo.commit(
        {
            "kept.py": "a = 1\n",
            "gone.py": "b = 2\n",
            "moved.py": "".join(f"line {i}\n" for i in range(40)),
            "mode.sh": "echo hi\n",
            "image.bin": b"\x00\x01\x02" * 10,
        },
        "base",
    )
    os.chmod(git_repo.path / "mode.sh", 0o755)
    git_repo.git("mv", "moved.py", "renamed.py")
    head = git_repo.commit(
        {
            "kept.py": "a = 1\nc = 3\n",
            "gone.py": None,
            "renamed.py": "".join(f"line {i}\n" for i in range(40)) + "one more\n",
            "image.bin": b"\x00\x03\x02" * 10,
            "new_empty.py": "",
            ODD: "x = 1\n",
        },
        "head",
    )
    return base, head


def test_real_git_output_of_every_kind_of_change(git_repo):
    base, head = _every_kind_of_change(git_repo)
    spec = f"{base}...{head}"
    raw = run_git(git_repo.path, ["diff", "--raw", "-z", "-M", "--no-abbrev", spec]).decode()
    entries = {e.path: e for e in raw_entries(raw)}
    assert entries["renamed.py"] == RawEntry("R", "renamed.py", "moved.py")
    assert entries["gone.py"].letter == "D" and entries["new_empty.py"].letter == "A"
    assert entries[ODD].letter == "A"  # tab, newline and quote survive without unquoting
    assert entries["mode.sh"].letter == "M"

    counts = numstat_counts(
        run_git(git_repo.path, ["diff", "--numstat", "-z", "-M", spec]).decode()
    )
    assert counts["renamed.py"] == LineCounts(1, 0)
    assert counts["kept.py"] == LineCounts(1, 0) and counts["gone.py"] == LineCounts(0, 1)
    assert counts["image.bin"] == LineCounts(binary=True)

    patches = file_patches(run_git(git_repo.path, ["diff", "-M", "--no-color", spec]))
    assert len(patches) == len(entries)
    by_order = dict(zip([e.path for e in raw_entries(raw)], patches, strict=True))
    assert hunks_of(by_order["kept.py"]).startswith(b"@@ -1 +1,2 @@")
    assert hunks_of(by_order["mode.sh"]) is None  # a mode change has no hunk
    assert hunks_of(by_order["new_empty.py"]) is None


def test_diff_files_pairs_each_file_with_its_own_patch(git_repo):
    base, head = _every_kind_of_change(git_repo)
    files = {f.path: f for f in diff_files(git_repo.path, base, head)}
    renamed = files["renamed.py"]
    assert (renamed.status, renamed.previous_path) == ("renamed", "moved.py")
    assert renamed.added_lines() == [(41, "one more")]
    assert files["kept.py"].added_lines() == [(2, "c = 3")]
    assert files["gone.py"].removed_lines() == [(1, "b = 2")]
    assert files["image.bin"].binary and files["image.bin"].patch is None
    assert files["mode.sh"].patch is None and files["mode.sh"].patch_omitted is None
    assert files[ODD].added_lines() == [(1, "x = 1")]


def test_output_cut_short_gives_what_is_whole_and_never_raises():
    raw = ":100644 100644 aaa bbb M\0kept.py\0:100644 100644 aaa bbb R100\0old.py\0"
    assert raw_entries(raw) == [RawEntry("M", "kept.py")]
    assert raw_entries(":100644 100644 aaa bbb M\0") == []
    assert raw_entries("") == []
    assert numstat_counts("3\t1\tkept.py\0" + "2\t0\t\0old.py\0") == {"kept.py": LineCounts(3, 1)}
    assert numstat_counts("garbage\0x\ty\0") == {}
    assert file_patches(b"") == [] and file_patches(b"not a diff\n") == []
