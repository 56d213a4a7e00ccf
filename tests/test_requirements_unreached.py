"""A changed requirement file that no platform's set reaches is still listed, with what
reaches it: vLLM's ``requirements/kv_connectors.txt`` is installed by the Dockerfile only."""

from bot.checks.base import CheckContext, MemoryCache, Status
from bot.checks.requirements import run
from bot.core.snapshot import snapshot_from_checkout
from bot.report import rules as rules_module
from bot.report.render import Report, render_markdown
from bot.requirements.unreached import MAX_UNREACHED

KV_BASE = (
    "lmcache >= 0.3.9\n"
    "nixl[cu13] >= 0.7.1, <= 0.10.1 # Required for disaggregated prefill\n"
    "nixl-cu12 >= 0.7.1, <= 0.10.1\n"
    "mooncake-transfer-engine >= 0.3.8\n"
)
KV_HEAD = (
    "lmcache >= 0.3.9\n"
    "nixl >= 1.1.0 # Required for disaggregated prefill\n"
    "mooncake-transfer-engine >= 0.3.8\n"
)
LAYOUT = {
    "requirements/common.txt": "numpy\n",
    "requirements/cuda.txt": "-r common.txt\ntorch==2.11.0\n",
    "requirements/kv_connectors.txt": KV_BASE,
    "requirements/lint.txt": "ruff\n",
    "docker/Dockerfile": "RUN --mount=type=bind,source=requirements/kv_connectors.txt,"
    "target=/tmp/kv_connectors.txt uv pip install -r /tmp/kv_connectors.txt\n",
    "CMakeLists.txt": "project(x)\n",
}
RULES = """
version: 1
checks:
  requirements:
    mentions: ["docker/**", ".buildkite/**"]
    platforms:
      cuda: {entries: [requirements/cuda.txt]}
"""


def _section(tmp_path, make_repo, head_files):
    repo = make_repo()
    base = repo.commit(LAYOUT)
    head = repo.commit(head_files)
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    ruleset = rules_module.load_file(path).checks.requirements
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    section = run(snapshot, ruleset, CheckContext(work_dir=work, cache=MemoryCache()))
    text = render_markdown(Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [section]))
    return section, text


def test_kv_connectors_change_is_listed_with_what_installs_it(tmp_path, make_repo):
    section, text = _section(
        tmp_path, make_repo, {"requirements/kv_connectors.txt": KV_HEAD, "CMakeLists.txt": "x\n"}
    )
    (finding,) = section.findings  # CMakeLists.txt is no requirement file
    assert (finding["platform"], finding["kind"]) == ("requirements/kv_connectors.txt", "unreached")
    assert finding["reached_by"] == ["named in docker/Dockerfile"]
    (changed,) = finding["changed"]
    assert (changed["from"], changed["to"]) == ("nixl[cu13]<=0.10.1,>=0.7.1", "nixl>=1.1.0")
    assert (changed["file"], changed["line"]) == ("requirements/kv_connectors.txt", 2)
    assert finding["removed"] == ["nixl-cu12<=0.10.1,>=0.7.1"]
    assert "in no declared set: requirements/kv_connectors.txt" in section.summary
    # No cell was reached, so nothing was checked; the listing is shown (a skipped section
    # would carry no fold), so the section warns.
    assert section.status == Status.WARN
    assert (
        "In no declared set: <code>requirements/kv_connectors.txt</code>: "
        "0 added, 1 removed, 1 changed" in text
    )
    # Its own line: trim_blocks once glued the first change to this bullet.
    assert "- reached by: named in docker/Dockerfile\n- removed `nixl-cu12" in text
    assert "changed `nixl[cu13]<=0.10.1,>=0.7.1` → `nixl>=1.1.0`" in text


def test_a_file_nothing_names_says_nothing(tmp_path, make_repo):
    section, text = _section(
        tmp_path,
        make_repo,
        {"requirements/lint.txt": "ruff==0.9\n", "requirements/cuda.txt": "-r common.txt\ntorch\n"},
    )
    found = {f["platform"]: f for f in section.findings}
    assert found["requirements/lint.txt"]["reached_by"] == []
    assert "nothing reaches it" in found["requirements/lint.txt"]["detail"]
    assert "- reached by: nothing" in text
    # A reached file is a cell as before, never an "unreached" entry.
    assert "requirements/cuda.txt" not in found
    assert found["cuda"]["changed"][0]["to"] == "torch"


def test_a_file_included_by_an_unreached_one_names_its_includer(tmp_path, make_repo):
    section, _ = _section(
        tmp_path,
        make_repo,
        {"requirements/dev.txt": "-r lint.txt\ntblib\n", "requirements/lint.txt": "ruff==0.9\n"},
    )
    found = {f["platform"]: f for f in section.findings}
    assert found["requirements/lint.txt"]["reached_by"] == ["included by requirements/dev.txt"]
    assert found["requirements/dev.txt"]["added"] == ["ruff==0.9", "tblib"]


def test_thousands_of_changed_files_are_listed_up_to_a_bound(tmp_path, make_repo):
    many = {f"requirements/extra/r{i:04d}.txt": f"pkg{i}\n" for i in range(120)}
    section, _ = _section(tmp_path, make_repo, many)
    unreached = [f for f in section.findings if f["kind"] == "unreached"]
    assert len(unreached) == MAX_UNREACHED
    assert f"+{120 - 3}" in section.summary  # three named, the rest counted
