from bot.core.globs import path_matches
from bot.core.snapshot import ChangedFile, DirTree, snapshot_from_checkout


def test_snapshot_from_checkout_reads_both_sides_and_diff(git_repo):
    base = git_repo.commit({"a.py": "one\ntwo\nthree\n", "old.txt": "x\n" * 20, "bin.dat": b"\0\1"})
    git_repo.branch("feature")
    head = git_repo.commit(
        {
            "a.py": "one\nTWO\nthree\nfour\n",
            "old.txt": None,
            "new.txt": "x\n" * 20,
            "bin.dat": b"\0\2",
            "added.md": "# hi\n",
        }
    )
    snap = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    files = {f.path: f for f in snap.files}
    assert snap.base.read_text("a.py") == "one\ntwo\nthree\n"
    assert snap.head.read_text("a.py").endswith("four\n")
    assert snap.head.read_text("missing.py") is None
    assert files["a.py"].status == "modified"
    assert (files["a.py"].additions, files["a.py"].deletions) == (2, 1)
    assert files["a.py"].added_lines() == [(2, "TWO"), (4, "four")]
    assert files["a.py"].removed_lines() == [(2, "two")]
    assert files["new.txt"].status == "renamed" and files["new.txt"].previous_path == "old.txt"
    assert files["bin.dat"].binary and files["bin.dat"].patch is None
    assert files["added.md"].status == "added"
    assert snap.touches(["**/*.md"]) == ["added.md"]
    assert snap.touches(["old.txt"]) == ["new.txt"]


def test_export_writes_selected_paths(git_repo, tmp_path):
    sha = git_repo.commit({"req/a.txt": "x\n", "req/b.txt": "y\n", "src/c.py": "z\n"})
    snap = snapshot_from_checkout(git_repo.path, sha, sha, trusted=True)
    out = snap.head.export(tmp_path / "out", ["req"])
    assert sorted(p.name for p in (out / "req").iterdir()) == ["a.txt", "b.txt"]
    assert not (out / "src").exists()


def test_dir_tree_refuses_paths_outside_root(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "secret").write_text("no")
    tree = DirTree(tmp_path / "root")
    assert tree.read_text("../secret") is None


def test_hunks_parse_counts():
    changed = ChangedFile("x.py", patch="@@ -1,2 +1,3 @@\n a\n+b\n c\n@@ -10 +11 @@\n-d\n+e")
    assert [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in changed.hunks()] == [
        (1, 2, 1, 3),
        (10, 1, 11, 1),
    ]


def test_path_matches_globs():
    assert path_matches("vllm/v1/attention/backends/flash.py", "vllm/v1/attention/**")
    assert path_matches("README.md", "**/*.md")
    assert path_matches("docs/a/b.md", "docs/")
    assert not path_matches("vllm/x.py", "*.py")


def test_dir_tree_export_never_follows_a_link_out_of_the_tree(tmp_path):
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (tmp_path / "outside.txt").write_text("secret")
    (root / "docs" / "leak.md").symlink_to(tmp_path / "outside.txt")
    (root / "docs" / "real.md").write_text("fine")
    out = DirTree(root).export(tmp_path / "out")
    assert (out / "docs" / "real.md").read_text() == "fine"
    assert not (out / "docs" / "leak.md").exists()


# --- bounds: no single file a PR controls can make a check read gigabytes ---------------------


def huge_module(megabytes: float = 8.5) -> str:
    """A Python module just over the reader's bound (8 MB): a thousand very long lines."""
    line = "    PADDING = " + repr("vllm.v1.attention.backends." * 300) + "\n"
    return "class _Padding:\n" + line * int(megabytes * 1_000_000 / len(line))


def test_tree_readers_refuse_a_file_over_the_bound_and_keep_reading(git_repo):
    import pytest

    from bot.core.limits import InputRejected

    base = git_repo.commit({"small.py": "x = 1\n"})
    head = git_repo.commit({"vllm/big.py": huge_module(), "after.py": "y = 2\n"})
    snap = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    for tree in (snap.head, DirTree(git_repo.path)):
        with pytest.raises(InputRejected) as caught:
            tree.read_text("vllm/big.py")
        assert str(caught.value) == (
            "`vllm/big.py` is 8.5 MB, over the 8.0 MB limit for one file; not read"
        )
        # The reader stays in step after skipping the blob.
        assert tree.read_text("after.py") == "y = 2\n"
        assert tree.read_text("small.py") == "x = 1\n"
    big = next(f for f in snap.files if f.path == "vllm/big.py")
    assert big.patch is None and not big.binary and big.additions > 1_000
    assert "over the 8.0 MB limit for one file" in big.patch_omitted
    with pytest.raises(InputRejected, match="vllm/big.py"):
        big.added_lines()
    assert next(f for f in snap.files if f.path == "after.py").added_lines() == [(1, "y = 2")]


def test_a_huge_registry_is_a_finding_in_generated_docs_and_integration(make_repo, check_context):
    from gendocs_helpers import REGISTRY, fixture_files

    from bot.checks import Status, all_checks
    from bot.report import rules
    from bot.report.runner import run_checks

    repo = make_repo()
    base = repo.commit(fixture_files(), "base")
    registry = fixture_files()[REGISTRY]
    head = repo.commit({REGISTRY: registry + huge_module()}, "grow the registry")
    snap = snapshot_from_checkout(repo.path, base, head, repo_name="o/r", trusted=True)
    checks = tuple(c for c in all_checks() if c.name in ("generated_docs", "integration"))
    report = run_checks(snap, rules.load_builtin("vllm"), check_context, checks)
    sections = {s.check: s for s in report.sections}
    limit = "over the 8.0 MB limit for one file"
    integration = sections["integration"]
    assert integration.status == Status.ERROR
    assert REGISTRY in integration.summary and limit in integration.summary
    docs = sections["generated_docs"]
    messages = [p["message"] for f in docs.findings for p in f["problems"]]
    assert any(REGISTRY in m and limit in m for m in messages), messages
    assert docs.status != Status.PASS


def test_only_a_commit_names_its_content_for_caching(git_repo, tmp_path):
    from bot.core.snapshot import GitTree

    sha = git_repo.commit({"a.txt": "a\n"})
    tree = GitTree(git_repo.path, sha)
    assert tree.cache_identity == sha  # a commit never changes
    tree.close()
    # A working directory can change under the reader: nothing may be cached by it.
    assert DirTree(git_repo.path).cache_identity is None


def _lines_of(megabytes: float) -> str:
    line = "x = " + repr("attention " * 10) + "\n"
    return line * int(megabytes * 1_000_000 / len(line))


def test_a_diff_over_1_mb_for_one_file_is_named_not_read(git_repo):
    # docs/checks/README.md: "1 MB for one file's diff"; the file (1.2 MB) is under 8 MB.
    base = git_repo.commit({"small.py": "x = 1\n"})
    head = git_repo.commit({"vllm/wide.py": _lines_of(1.2), "vllm/fits.py": _lines_of(0.9)})
    snap = snapshot_from_checkout(git_repo.path, base, head, trusted=True)
    files = {f.path: f for f in snap.files}
    wide, fits = files["vllm/wide.py"], files["vllm/fits.py"]
    assert wide.patch is None and not wide.binary and wide.additions > 1_000
    assert "over the 1.0 MB limit for one file's diff" in wide.patch_omitted
    assert fits.patch is not None and fits.patch_omitted is None
    assert len(fits.added_lines()) == fits.additions


def test_a_file_that_grows_after_it_was_measured_is_still_bounded(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    import pytest

    from bot.core.limits import InputRejected

    grown = tmp_path / "vllm" / "grown.py"
    grown.parent.mkdir()
    grown.write_bytes(b"#" * 8_500_000)  # docs/checks: 8 MB a file
    measured = os.stat_result((*grown.stat()[:6], 100, *grown.stat()[7:]))  # 100 bytes then
    real_stat = Path.stat

    def stat_before_it_grew(self, *args, **kwargs):
        return measured if self == grown else real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat_before_it_grew)
    with pytest.raises(InputRejected, match="over the 8.0 MB limit for one file"):
        DirTree(tmp_path).read_bytes("vllm/grown.py")
