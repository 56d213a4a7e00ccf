"""The integration list as GitHub renders it (cmark-gfm): one item per new name, where it was
introduced said once, and every place it is still missing from under it (a list, not a
table: the table's "Still missing from" column ran past GitHub's 780 px comment)."""

from __future__ import annotations

import re

from github_render import HtmlShape, render_gfm

from bot.checks import Section, Status, get_check
from bot.checks.integration import by_name
from bot.core.snapshot import snapshot_from_checkout
from bot.report import rules
from bot.report.render import Report, render_markdown

HTML_BASE = "https://github.com"
# A vLLM-shaped tree: a new attention backend, and the places the built-in rules expect it.
REGISTRY = "vllm/v1/attention/backends/registry.py"
BASE = {
    REGISTRY: (
        "import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
        '    FLASHMLA = "vllm.v1.attention.backends.mla.flashmla.FlashMLABackend"\n'
        '    ROCM_ATTN = "vllm.v1.attention.backends.rocm_attn.RocmAttentionBackend"\n'
    ),
    "vllm/platforms/cuda.py": (
        "def _get_backend_priorities(use_mla):\n    if use_mla:\n"
        "        return [AttentionBackendEnum.FLASHMLA]\n    return []\n"
    ),
    "tests/v1/attention/test_mla_backends.py": "BACKENDS = [AttentionBackendEnum.FLASHMLA]\n",
    "tests/v1/attention/test_attention_backends.py": "BACKENDS = []\n",
    "benchmarks/attention_benchmarks/configs/mla_decode.yaml": "backends:\n  - FLASHMLA\n",
    "requirements/cuda.txt": "-r common.txt\ntorch==2.9.0\n",
    "requirements/common.txt": "numpy\n",
}
NEW_MEMBER = (
    '    TOKENSPEED_MLA = "vllm.v1.attention.backends.mla.tokenspeed_mla.TokenspeedMLABackend"\n'
)
BACKEND_MODULE = (
    "import torch\n\n\ndef decode():\n    from tokenspeed_mla import tokenspeed_mla_decode\n"
    "    return tokenspeed_mla_decode\n"
)


def _run(git_repo, head_files, check_context):
    base = git_repo.commit(BASE, "base")
    head = git_repo.commit(head_files, "change")
    snapshot = snapshot_from_checkout(git_repo.path, base, head, repo_name="org/vllm", trusted=True)
    integration = rules.load_builtin("vllm").checks.integration
    return get_check("integration").run(snapshot, integration, check_context)


def _items(html: str) -> list[tuple[str, list[str]]]:
    """Each new name's item: its own line, and the places listed under it."""
    assert "<table>" not in html, html
    found = []
    for item in re.findall(r"<li>(.*?)<ul>(.*?)</ul>\s*</li>", html, re.S):
        found.append((item[0], re.findall(r"<li>(.*?)</li>", item[1], re.S)))
    assert found, html
    return found


def _rendered(section: Section) -> str:
    report = Report("org/vllm", 1, "a" * 40, "b" * 40, [section])
    markdown = render_markdown(report, html_base=HTML_BASE)
    html = render_gfm(markdown)
    shape = HtmlShape(html)
    assert shape.opened.get("details") == shape.closed.get("details")
    return html


def test_one_item_per_name_with_the_places_still_missing_under_it(git_repo, check_context):
    section = _run(
        git_repo,
        {
            REGISTRY: BASE[REGISTRY] + NEW_MEMBER,
            "vllm/v1/attention/backends/mla/tokenspeed_mla.py": BACKEND_MODULE,
        },
        check_context,
    )
    assert len(section.findings) == 4  # three places for the member, one for its import
    html = _rendered(section)
    assert "Looked in" not in html  # the places say where they looked
    items = _items(html)
    names = [line.split(",")[0].strip() for line, _ in items]
    assert names == ["<code>TOKENSPEED_MLA</code>", "<code>tokenspeed_mla</code>"]
    member, places = items[0]
    # Introduced once, linked to the line at head.
    assert html.count(f"{REGISTRY}:7") == 1
    assert f'href="{HTML_BASE}/org/vllm/blob/{"a" * 40}/{REGISTRY}#L7"' in member
    assert [re.sub(r"<[^>]+>", "", p).split(":")[0] for p in places] == [
        "CUDA priority lists",
        "the MLA backend tests",
        "the MLA decode benchmark config",
    ]
    assert "<code>vllm/platforms/cuda.py</code>" in places[0]
    assert any("<code>tokenspeed-mla</code>" in p for p in items[1][1])  # what to declare


def test_a_section_without_the_grouped_items_groups_its_findings(git_repo, check_context):
    # A report stored before the rows were shaped (or built by hand) still groups by name.
    section = _run(git_repo, {REGISTRY: BASE[REGISTRY] + NEW_MEMBER}, check_context)
    bare = Section("integration", Status.WARN, section.summary, findings=section.findings)
    items = _items(_rendered(bare))
    assert [line.split(",")[0].strip() for line, _ in items] == ["<code>TOKENSPEED_MLA</code>"]
    assert len(items[0][1]) == 3


def test_grouping_keeps_order_aliases_and_skips_optional_imports():
    def finding(symbol, where, **extra):
        base = {"symbol": symbol, "where": where, "introduced_at": "a.py:1", "path": "a.py"}
        return {**base, "line": 1, "missing_in": ["b.py"], **extra}

    rows = by_name(
        [
            finding("B", "x", aliases=["b"]),
            finding("A", "x"),
            finding("B", "y", aliases=["b", "bee"]),
            finding("opt", "z", optional=True),
        ]
    )
    assert [r["symbol"] for r in rows] == ["B", "A"]
    assert rows[0]["aliases"] == ["b", "bee"]
    assert [p["where"] for p in rows[0]["places"]] == ["x", "y"]
