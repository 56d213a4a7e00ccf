from bot.snapshot import ChangedFile, DirTree, path_matches, snapshot_from_checkout


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
    snap = snapshot_from_checkout(git_repo.path, base, head)
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
    snap = snapshot_from_checkout(git_repo.path, sha, sha)
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
