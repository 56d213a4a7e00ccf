"""Bad input for the review: every way a file can be unreadable is a finding, never a crash."""

from __future__ import annotations

import pytest
from review_helpers import flags, vllm_review_rules

from bot.core.limits import InputRejected
from bot.review.engine import NOT_REVIEWED, review_files
from bot.review.source import ReviewedFile

BACKEND = "vllm/v1/attention/backends/swift.py"


def _all_lines(text: str) -> list[int]:
    return list(range(1, text.count("\n") + 2))


def _review(text: str, **overrides):
    rules = vllm_review_rules().model_copy(update=overrides)
    return review_files([(BACKEND, text, _all_lines(text))], rules)


def test_a_file_that_does_not_parse_is_one_finding_with_its_line():
    result = _review("class SwiftImpl:\n    def forward(self, q):\n        return (q\n")
    assert result.flags == []
    (finding,) = result.findings()
    assert finding["pattern"] == NOT_REVIEWED
    assert "does not parse" in finding["why"] and finding["line"] > 0
    assert "waiver" not in finding  # nothing to waive: the file was not read


def test_null_bytes_and_deep_nesting_are_findings():
    nested = "x = " + "(" * 300 + "1" + ")" * 300 + "\n"
    for text in ("x = 1\0\n", nested):
        (finding,) = _review(text).findings()
        assert finding["pattern"] == NOT_REVIEWED, text[:20]


def test_deep_blocks_are_reviewed_or_rejected_never_raised():
    body, indent = "", ""
    for depth in range(90):  # CPython stops at 100 levels of indentation
        body += f"{indent}    if self.cache_{depth} is None and num_tokens % num_reqs != 0:\n"
        indent += "    "
    body += f"{indent}    self.cache = q.view(-1)\n"
    text = (
        "class SwiftMLAMetadataBuilder:\n"
        "    query_len_support = QueryLenSupport.UNIFORM\n"
        "    def forward(self, q, num_tokens, num_reqs):\n" + body
    )
    result = _review(text, max_nodes=20_000)
    assert all(f.pattern in ("capability-contradiction", NOT_REVIEWED) for f in result.flags)


def test_an_enormous_function_is_rejected_by_the_node_bound():
    statements = "".join(f"    x{i} = layer.scale * {i}\n" for i in range(3000))
    text = "def forward(self, layer):\n" + statements
    (finding,) = _review(text, max_nodes=5_000).findings()
    assert finding["pattern"] == NOT_REVIEWED and "5,000 syntax nodes" in finding["why"]
    with pytest.raises(InputRejected):
        ReviewedFile.parse(BACKEND, text, [1], max_nodes=5_000)


def test_unknown_lines_and_the_file_limit_are_named():
    rules = vllm_review_rules().model_copy(update={"max_files": 1})
    result = review_files(
        [(BACKEND, "x = 1\n", None), ("b.py", "x = 1\n", [1]), ("c.py", "y = 2\n", [1])], rules
    )
    reasons = [f["why"] for f in result.findings()]
    assert any("no diff to map" in r for r in reasons)
    assert any("file limit" in r for r in reasons)


def test_waivers_name_patterns_and_only_silence_their_own():
    source = (
        "class A:\n"
        "    def forward(self, q, layer):\n"
        "        if self.s is None:  # prbot: ignore[unbounded-cache, lazy-cache]\n"
        "            self.s = layer.scale\n"
    )
    assert flags(source) == []
    assert len(flags(source.replace("lazy-cache", "literal-dimensions"))) == 1
    assert len(flags(source.replace("# prbot: ignore[", "# ignore["))) == 1


def test_long_snippets_are_cut():
    source = (
        "class A:\n    def forward(self, q, layer):\n"
        f"        if self.s is None:  # {'why ' * 80}\n            self.s = layer.scale\n"
    )
    (found,) = flags(source)
    assert len(found.snippet) == 160 and found.snippet.endswith("…")
