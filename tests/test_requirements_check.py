"""The requirements check end to end on git fixtures shaped like vLLM's requirements/."""

import dataclasses
import tarfile

import pytest
from requirements_helpers import COMPILED_HEADER, LAYOUT, WHEELS, rule_text

from bot.checks.base import CheckContext, MemoryCache, Status
from bot.checks.requirements import CHECK, run
from bot.core.snapshot import snapshot_from_checkout
from bot.local.sandbox import SandboxRunner
from bot.report import rules as rules_module
from bot.report.render import Report, render_markdown
from bot.requirements.localwheels import write_index


@pytest.fixture
def wheels(tmp_path):
    return write_index(tmp_path / "wheels", WHEELS)


@pytest.fixture
def vllm_like(make_repo):
    repo = make_repo("vllm")
    base = repo.commit(LAYOUT, "base")
    repo.branch("pr")
    return repo, base


def load_rules(tmp_path, wheels, extra=""):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_text(wheels, extra))
    return rules_module.load_file(path)


def check(repo, base, head, ruleset, context):
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    return run(snapshot, ruleset.checks.requirements, context), snapshot


def context_for(tmp_path, runner=None, cache=None):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return CheckContext(work_dir=work, runner=runner, cache=cache or MemoryCache())


def rows(section):
    return {(f["platform"], f["arch"]): f for f in section.findings}


def test_common_change_reaches_every_platform_and_resolves(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit(
        {"requirements/common.txt": LAYOUT["requirements/common.txt"].replace("1.0", "2.0")}
    )
    runner = SandboxRunner(timeout=60)
    section, _ = check(
        repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path, runner)
    )
    found = rows(section)
    assert set(found) == {
        ("cuda", "x86_64"),
        ("cuda", "aarch64"),
        ("rocm", "x86_64"),
        ("cpu", "x86_64"),
        ("cpu", "aarch64"),
        ("cpu", "ppc64le"),
        ("test-cuda", "x86_64"),
    }
    for finding in found.values():
        assert finding["why"] == ["requirements/common.txt"]
    cuda = found[("cuda", "x86_64")]
    assert cuda["changed"] == [
        {
            "name": "alpha",
            "from": "alpha>=1.0",
            "to": "alpha>=2.0",
            "file": "requirements/common.txt",
            "line": 2,
            "side": "head",
            "with": [],
        }
    ]
    assert cuda["resolution"] == "ok"
    assert found[("cpu", "ppc64le")]["resolution"] == "skipped"
    assert "ppc64le" in found[("cpu", "ppc64le")]["detail"]
    # test/cuda.txt was compiled with -c cuda.txt, which includes common.txt; but it pins no
    # alpha, and a constraint on a package nothing requires adds nothing: not stale.
    assert found[("test-cuda", "x86_64")]["compiled"] == []
    # cpu/ppc64le was not resolved: never a pass.
    assert section.status == Status.WARN
    assert "not resolved on 1 (uv has no --python-platform for ppc64le)" in section.summary
    assert "build-cuda/x86_64" in section.data["unaffected"]
    assert runner.invocations == 6  # every resolvable cell once, in parallel


def test_rocm_change_reports_rocm_only(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit({"requirements/rocm.txt": "-r common.txt\nrocm-tools==1.0\nextra-pkg\n"})
    section, _ = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    (finding,) = section.findings
    assert (finding["platform"], finding["arch"]) == ("rocm", "x86_64")
    assert finding["added"] == ["extra-pkg"]
    assert finding["added_from"][0]["line"] == 3
    assert finding["resolution"] == "skipped"  # no runner in this context


def test_torch_bump_in_one_file_is_inconsistent_and_fails_to_resolve(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    cuda = LAYOUT["requirements/cuda.txt"].replace("torch==2.11.0", "torch==2.12.0")
    head = repo.commit({"requirements/cuda.txt": cuda})
    context = context_for(tmp_path, SandboxRunner(timeout=60))
    section, _ = check(repo, base, head, load_rules(tmp_path, wheels), context)
    assert section.status == Status.FAIL
    found = rows(section)
    assert found[("cuda", "x86_64")]["resolution"] == "failed"
    assert "torchvision" in found[("cuda", "x86_64")]["detail"]
    # The test set pins the old torch against the new constraint.
    assert "torch==2.11.0 and torch==2.12.0" in found[("test-cuda", "x86_64")]["detail"]
    conflict = found[("cuda", "x86_64")]["conflicts"][0]
    assert conflict["name"] == "torch" and conflict["new"]
    files = {line["file"] for line in conflict["lines"]}
    assert files == {
        "requirements/cuda.txt",
        "requirements/build/cuda.txt",
        "pyproject.toml",
        "requirements/test/cuda.in",
    }
    assert "does not resolve on" in section.summary and "cuda/x86_64" in section.summary
    assert section.findings[0]["resolution"] == "failed"  # strongest first
    # test/cuda.in did not change: the bump came through its -c requirements/cuda.txt.
    (changed,) = found[("test-cuda", "x86_64")]["changed"]
    assert (changed["file"], changed["line"], changed["side"]) == (
        "requirements/cuda.txt",
        4,
        "head",
    )
    # The value shown merges test/cuda.in's own pin with that constraint; both lines are
    # named, or `requirements/cuda.txt:4` would read as the source of `torch==2.11.0`
    # (on vLLM 0.27.1..0.33.0, transformers at test/cuda.in:43 shown with common.txt:11's range).
    assert changed["with"] == [{"file": "requirements/test/cuda.in", "line": 2}]
    text = render_markdown(Report("vllm", 1, "a" * 40, "b" * 40, [section]))  # no links
    assert (
        "- changed `torch==2.11.0` → `torch==2.11.0,==2.12.0` at `requirements/cuda.txt:4`"
        " (with `requirements/test/cuda.in:2`)\n"
    ) in text
    assert "- changed `torch==2.11.0` → `torch==2.12.0` at `requirements/cuda.txt:4`\n" in text


def test_marker_split_only_changes_the_matching_architecture(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    cuda = LAYOUT["requirements/cuda.txt"] + 'kernels-arm==1.0; platform_machine == "aarch64"\n'
    head = repo.commit({"requirements/cuda.txt": cuda})
    section, _ = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    found = rows(section)
    assert found[("cuda", "aarch64")]["added"] == ["kernels-arm==1.0"]
    assert found[("cuda", "x86_64")]["added"] == []


def test_recheck_without_requirement_change_runs_uv_zero_times(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit({"requirements/rocm.txt": "-r common.txt\nrocm-tools==1.0\n# note\n"})
    runner, cache = SandboxRunner(timeout=60), MemoryCache()
    ruleset = load_rules(tmp_path, wheels)
    first, _ = check(repo, base, head, ruleset, context_for(tmp_path, runner, cache))
    assert runner.invocations == 1 and first.findings[0]["resolution"] == "ok"
    again, _ = check(repo, base, head, ruleset, context_for(tmp_path, runner, cache))
    assert runner.invocations == 1
    assert again.findings[0]["cached"] and again.findings[0]["resolution"] == "ok"


def test_unrelated_change_is_skipped_without_running_anything(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit({"vllm/__init__.py": "x = 1\n"})
    runner = SandboxRunner()
    section, _ = check(
        repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path, runner)
    )
    assert section.status == Status.SKIP and section.summary == "no requirement file changed"
    assert runner.invocations == 0
    head2 = repo.commit({"docs/notes.txt": "hello\n"})
    section, _ = check(repo, base, head2, load_rules(tmp_path, wheels), context_for(tmp_path))
    assert section.summary == "no changed file reaches any platform"


def test_watched_file_reaches_every_cell(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit({"setup.py": "print('build')\n"})
    section, snapshot = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    assert len(section.findings) == len(rows(section)) >= 10
    assert all(f["why"] == ["setup.py"] and f["only_watched"] for f in section.findings)
    # Nothing resolved and nothing to say: skipped, and a skipped section has no fold.
    assert section.status == Status.SKIP
    text = render_markdown(Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [section]))
    assert "<details>" not in text
    # Beside a warning (another cell's change), cells with 0 added, 0 removed, 0 changed,
    # affected only by setup.py, are one line.
    warned = dataclasses.replace(section, status=Status.WARN)
    text = render_markdown(Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [warned]))
    assert "| Platform |" not in text and "<details><summary>`cuda`" not in text
    assert (
        f"{len(section.findings)} cells with no package change, affected only because"
        " `setup.py` changed: `cuda` / x86\\_64, aarch64 · `rocm` / x86\\_64"
    ) in text


def test_a_set_the_watched_files_do_not_reach_is_not_affected_by_them(tmp_path, vllm_like, wheels):
    # vLLM's docs build installs requirements/docs.txt and never runs setup.py; its row said
    # "Why: ... setup.py" on 0.20.2..0.21.0 and 0.27.1..0.33.0.
    repo, _ = vllm_like
    base = repo.commit({"requirements/docs.in": "alpha\n"}, "docs set")
    head = repo.commit({"setup.py": "print('build')\n"})
    docs = "      docs: {entries: [requirements/docs.in], kind: docs, watched: false}\n"
    path = tmp_path / "rules.yaml"
    path.write_text(rule_text(wheels) + docs)
    ruleset = rules_module.load_file(path)
    section, _ = check(repo, base, head, ruleset, context_for(tmp_path))
    assert ("docs", "x86_64") not in rows(section)
    assert "docs/x86_64" in section.data["unaffected"]
    assert rows(section)[("cuda", "x86_64")]["why"] == ["setup.py"]


def test_a_watched_file_and_a_real_change_fold_only_the_empty_cells(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit(
        {"setup.py": "print('build')\n", "requirements/rocm.txt": "-r common.txt\nrocm-tools\n"}
    )
    section, snapshot = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    text = render_markdown(Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [section]))
    assert "| `rocm` | x86\\_64 | 0 | 0 | 1 |" in text
    assert "| `cuda` |" not in text
    assert f"{len(section.findings) - 1} cells with no package change" in text


def test_an_unreachable_index_is_never_a_pass(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit({"requirements/rocm.txt": "-r common.txt\nrocm-tools>=1.0\n"})
    path = tmp_path / "rules.yaml"
    # Port 9 (discard) on loopback: the connection is refused at once.
    path.write_text(
        rule_text(wheels).replace(
            f'[--no-index, --find-links, "{wheels}"]', '[--index-url, "http://127.0.0.1:9/simple"]'
        )
    )
    ruleset = rules_module.load_file(path)
    context = context_for(tmp_path, SandboxRunner(timeout=60))
    section, _ = check(repo, base, head, ruleset, context)
    (finding,) = section.findings
    assert finding["resolution"] == "skipped"
    assert finding["detail"].startswith("index unreachable: 127.0.0.1:9")
    assert section.status == Status.WARN
    assert "not resolved on 1 (index unreachable: 127.0.0.1)" in section.summary


def test_nothing_resolved_and_nothing_changed_is_a_skip_with_the_reason(
    tmp_path, vllm_like, wheels
):
    repo, base = vllm_like
    head = repo.commit({"requirements/rocm.txt": "-r common.txt\nrocm-tools==1.0\n# note\n"})
    section, _ = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    assert section.status == Status.SKIP
    assert "not resolved on 1 (no sandboxed runner to run uv)" in section.summary


def test_bad_input_gives_findings_with_file_and_line_and_others_still_report(
    tmp_path, vllm_like, wheels
):
    repo, base = vllm_like
    head = repo.commit(
        {
            "requirements/rocm.txt": "-r common.txt\nrocm-tools==1.0 ===\n--frobnicate\n"
            'x; platform_machine = "x86_64"\n-r missing.txt\n-r loop.txt\n',
            "requirements/loop.txt": "-r rocm.txt\n",
            "requirements/common.txt": LAYOUT["requirements/common.txt"] + "delta-new\n",
        }
    )
    runner = SandboxRunner(timeout=60)
    section, _ = check(
        repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path, runner)
    )
    found = rows(section)
    problems = {(p["file"], p["line"]): p["message"] for p in found[("rocm", "x86_64")]["problems"]}
    assert problems[("requirements/rocm.txt", 2)].startswith("invalid requirement")
    assert problems[("requirements/rocm.txt", 3)] == "unknown option '--frobnicate'"
    assert problems[("requirements/rocm.txt", 4)].startswith("invalid marker")
    assert problems[("requirements/rocm.txt", 5)] == "-r requirements/missing.txt: file not found"
    assert "circular include" in problems[("requirements/loop.txt", 1)]
    assert found[("rocm", "x86_64")]["resolution"] == "skipped"
    # The other platforms are still reported, and still resolve (delta-new has no wheel: fails).
    assert found[("cuda", "x86_64")]["added"] == ["delta-new"]
    assert found[("cuda", "x86_64")]["resolution"] == "failed"
    assert section.status == Status.FAIL


def test_rerun_of_stale_compiled_file_shows_the_difference(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit({"requirements/test/cuda.in": "pytest-lite\ntorch==2.11.0\ncmake\n"})
    ruleset = load_rules(tmp_path, wheels, "    rerun_compiled: true")
    context = context_for(tmp_path, SandboxRunner(timeout=60))
    section, _ = check(repo, base, head, ruleset, context)
    (compiled,) = rows(section)[("test-cuda", "x86_64")]["compiled"]
    assert compiled["changed_sources"] == ["requirements/test/cuda.in"]
    assert compiled["rerun"] == "differs"
    assert "+cmake==3.30" in compiled["rerun_detail"]


def test_default_rules_skip_the_check(vllm_like, tmp_path):
    repo, base = vllm_like
    head = repo.commit({"requirements/rocm.txt": "rocm-tools\n"})
    ruleset = rules_module.load_builtin("default")
    section, _ = check(repo, base, head, ruleset, context_for(tmp_path))
    assert section.status == Status.SKIP
    assert section.summary == "no platforms declared in rules"


def test_vllm_rules_declare_the_real_matrix():
    req = rules_module.load_builtin("vllm").checks.requirements
    assert set(req.platforms) == {"cuda", "rocm", "cpu", "xpu", "tpu"}
    assert req.platforms["cpu"].archs == ["x86_64", "aarch64", "ppc64le", "s390x"]
    assert req.platforms["cuda"].archs == ["x86_64", "aarch64"]
    assert {s.kind for s in req.sets.values()} == {"build", "test", "docs"}


def test_bad_rules_name_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "version: 1\nchecks:\n  requirements:\n    platforms:\n      cuda: {entries: []}\n"
    )
    with pytest.raises(rules_module.RulesError) as error:
        rules_module.load_file(path)
    assert "checks.requirements.platforms.cuda.entries" in str(error.value)
    assert ":5:" in str(error.value)


def test_rendered_section_is_one_table_with_escaped_details(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit(
        {
            "requirements/cuda.txt": LAYOUT["requirements/cuda.txt"]
            + "<b>@someone</b> ===\nnew_pkg>=1\n"
        }
    )
    section, snapshot = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    report = Report("org/repo", 1, snapshot.head_sha, snapshot.base_sha, [section])
    text = render_markdown(report)
    assert "| Platform | Arch | Added | Removed | Changed | Resolution | Why |" in text
    assert "| `cuda` | x86\\_64, aarch64 | 1 | 0 | 0 |" in text
    assert "<b>" not in text and "@someone" not in text
    assert "<details><summary><code>cuda</code> / x86_64" in text  # no Markdown in a <summary>
    assert "`requirements/cuda.txt:9`" in text
    assert CHECK.title in text


def test_failure_already_present_at_base_is_a_warning(tmp_path, make_repo, wheels):
    repo = make_repo("broken")
    broken = {**LAYOUT, "requirements/rocm.txt": "-r common.txt\nrocm-tools==2.0\n"}
    base = repo.commit(broken)
    head = repo.commit({"requirements/rocm.txt": "-r common.txt\nrocm-tools==2.0\nbeta\n"})
    runner = SandboxRunner(timeout=60)
    context = context_for(tmp_path, runner)
    section, _ = check(repo, base, head, load_rules(tmp_path, wheels), context)
    (finding,) = section.findings
    assert finding["resolution"] == "failed" and finding["failing_at_base"]
    assert "already failing at base" in finding["detail"]
    assert section.status == Status.WARN
    assert runner.invocations == 2  # head, then base


def test_stale_compiled_file_of_an_undeclared_set_still_reports(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    header = COMPILED_HEADER.replace("test/cuda", "docs").replace(" -c requirements/cuda.txt", "")
    repo.commit({"requirements/docs.in": "mkdocs\n", "requirements/docs.txt": header + "x==1\n"})
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit({"requirements/docs.in": "mkdocs\nmkdocs-material\n"})
    section, snapshot = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    finding, source = section.findings
    assert (finding["platform"], finding["kind"]) == ("requirements/docs.txt", "compiled")
    assert finding["compiled"][0]["changed_sources"] == ["requirements/docs.in"]
    # mkdocs-material is now required and docs.txt does not pin it: certainly stale.
    assert finding["compiled"][0]["verdict"] == "stale"
    assert finding["compiled"][0]["reasons"] == ["`mkdocs-material` is required but not pinned"]
    # The .in itself is in no declared set, and is still listed with its change.
    assert (source["platform"], source["kind"]) == ("requirements/docs.in", "unreached")
    assert source["added"] == ["mkdocs-material"]
    assert source["reached_by"] == ["compiled into requirements/docs.txt"]
    assert section.status == Status.WARN
    text = render_markdown(Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [section]))
    blob = f"https://github.com/o/r/blob/{snapshot.head_sha}"
    assert (
        f"[`requirements/docs.txt`]({blob}/requirements/docs.txt) stale: not recompiled after"
        f" [`requirements/docs.in`]({blob}/requirements/docs.in)"
    ) in text


def test_one_line_common_change_is_one_folded_block_not_one_per_cell(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    head = repo.commit({"requirements/common.txt": LAYOUT["requirements/common.txt"] + "alpha<3\n"})
    context = context_for(tmp_path, SandboxRunner(timeout=60))
    section, snapshot = check(repo, base, head, load_rules(tmp_path, wheels), context)
    # The contract keeps one finding per cell …
    assert len([f for f in section.findings if f["changed"]]) == 6
    text = render_markdown(Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [section]))
    # … the comment says the change once, for all six cells, with their outcomes grouped.
    assert text.count("changed `alpha>=1.0` → `alpha<3,>=1.0`") == 1
    assert (
        "<details><summary><code>cuda</code> / x86_64, aarch64 · <code>rocm</code> / x86_64 · "
        "<code>cpu</code> / x86_64,"
        " aarch64, ppc64le: ✅ ok 5, ⏭️ skipped 1</summary>"
    ) in text
    assert "- resolves on `cuda` / x86\\_64, aarch64 · `rocm` / x86\\_64 · `cpu` / x86\\_64" in text
    assert "- skipped on `cpu` / ppc64le: uv has no --python-platform for ppc64le" in text
    assert "packages" not in text  # a per-cell package count would split the group again


def test_evidence_links_to_the_line_at_head_or_at_base(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    cuda = LAYOUT["requirements/cuda.txt"].replace(
        'kernels==1.0; platform_machine == "x86_64"\n', ""
    )
    head = repo.commit({"requirements/cuda.txt": cuda + "new-pkg>=1\n"})
    section, snapshot = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    text = render_markdown(Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [section]))
    at_base = f"https://github.com/o/r/blob/{snapshot.base_sha}/requirements/cuda.txt#L7"
    at_head = f"https://github.com/o/r/blob/{snapshot.head_sha}/requirements/cuda.txt#L7"
    assert f"removed `kernels==1.0` (was at [`requirements/cuda.txt:7`]({at_base}))" in text
    assert f"added `new-pkg>=1` at [`requirements/cuda.txt:7`]({at_head})" in text


def test_two_python_versions_get_a_python_column_and_unaffected_targets_once(
    tmp_path, vllm_like, wheels
):
    repo, base = vllm_like
    head = repo.commit({"requirements/rocm.txt": "-r common.txt\nrocm-tools>=1.0\n"})
    ruleset = load_rules(tmp_path, wheels, '    python_versions: ["3.11", "3.12"]')
    section, snapshot = check(repo, base, head, ruleset, context_for(tmp_path))
    assert [(f["platform"], f["python"]) for f in section.findings] == [
        ("rocm", "3.11"),
        ("rocm", "3.12"),
    ]
    text = render_markdown(Report("tree", None, snapshot.head_sha, snapshot.base_sha, [section]))
    assert "| Platform | Arch | Python | Added |" in text
    assert "Not reached by this change: cuda, cpu, build-system, build-cuda, test-cuda." in text
    assert (
        "<details><summary><code>rocm</code> / x86_64 py3.11, x86_64 py3.12: ⏭️ skipped</summary>"
        in text
    )


def test_errors_come_first_and_long_lists_are_cut(tmp_path, vllm_like, wheels):
    repo, base = vllm_like
    many = "".join(f"pkg{i}>=1\n" for i in range(30))
    head = repo.commit(
        {"requirements/rocm.txt": "-r common.txt\nrocm-tools==1.0\n" + many + "x[\n"}
    )
    section, snapshot = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    (finding,) = section.findings
    assert len(finding["added"]) == 30  # the JSON keeps every package
    text = render_markdown(Report("tree", None, snapshot.head_sha, snapshot.base_sha, [section]))
    assert text.index("- error at `requirements/rocm.txt:33`") < text.index("- added `pkg0>=1`")
    assert text.count("- added `pkg") == 25
    assert "- … and 5 more package changes (every one is in the JSON report)" in text


def test_untrusted_authors_requirements_are_resolved_without_building(tmp_path, vllm_like, wheels):
    # An sdist-only package: resolving it would run its setup.py, i.e. the PR's choice of code.
    source = tmp_path / "src" / "delta-1.0"
    source.mkdir(parents=True)
    (source / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: delta\nVersion: 1.0\n")
    (source / "setup.py").write_text("raise SystemExit('setup.py ran')\n")
    with tarfile.open(wheels / "delta-1.0.tar.gz", "w:gz") as sdist:
        sdist.add(source, arcname="delta-1.0")
    repo, base = vllm_like
    head = repo.commit({"requirements/rocm.txt": LAYOUT["requirements/rocm.txt"] + "delta\n"})
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    snapshot = dataclasses.replace(snapshot, trusted=False)
    ruleset = load_rules(tmp_path, wheels)
    section = run(
        snapshot, ruleset.checks.requirements, context_for(tmp_path, SandboxRunner(timeout=60))
    )
    rocm = rows(section)[("rocm", "x86_64")]
    assert rocm["resolution"] == "failed"
    assert "no usable wheels" in rocm["detail"]
    assert "setup.py ran" not in rocm["detail"]


def test_a_deep_include_chain_through_the_whole_check_is_a_finding(tmp_path, vllm_like, wheels):
    # test_requirements_graph walks 3,000 deep; through git, 200 show the same bound faster.
    repo, base = vllm_like
    chain = {f"requirements/deep/r{i}.txt": f"-r r{i + 1}.txt\n" for i in range(200)}
    chain["requirements/rocm.txt"] = "-r common.txt\n-r deep/r0.txt\nrocm-tools==1.0\n"
    head = repo.commit(chain)
    section, _ = check(repo, base, head, load_rules(tmp_path, wheels), context_for(tmp_path))
    assert section.status == Status.FAIL
    problems = [p["message"] for p in rows(section)[("rocm", "x86_64")]["problems"]]
    assert any("nested over 50 deep; not followed" in m for m in problems)
