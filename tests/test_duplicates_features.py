"""Features: text cleaning, claimed issues, added identifiers, hunks, lenient records."""

from __future__ import annotations

import pytest

from bot.duplicates.code import base_ranges, code_terms, identifiers_added
from bot.duplicates.features import PRFeatures, build_features, is_bot
from bot.duplicates.records import MAX_FILES, FileChange, RecordError, record_from_dict
from bot.duplicates.text import claimed_issues, clean_body, mentioned_numbers, tokens


def test_tokens_split_identifiers_and_stem() -> None:
    words = tokens("Fix crashes in FlashAttention when block_size is 32")
    assert {"crash", "flashattent", "flash", "attent", "block_siz", "block"} <= set(words)
    assert "in" not in words and "32" not in words
    # spellings people vary: acronyms, MoE, hyphenated compounds
    assert "sdpa" in tokens("scaled_dot_product_attention")
    assert "moe" in tokens("MoE") and "moe" in tokens("moe")
    assert "allreduc" in tokens("all-reduce") and "allreduc" in tokens("allreduce")


def test_stacked_series_are_recognised() -> None:
    from bot.duplicates.text import stacked_on

    assert stacked_on("Stacked on #12. Follow-up to #13, depends on org/r#14") == {12, 13, 14}
    assert stacked_on("Duplicate of #15") == set()


def test_claims_are_stronger_than_mentions() -> None:
    body = "Fixes #12, closes org/repo#13 and resolves https://github.com/o/r/issues/14. See #15."
    assert claimed_issues(body) == {12, 13, 14}
    assert mentioned_numbers(body) == {12, 13, 14, 15}
    assert claimed_issues("<!-- Fixes #99 in the template -->") == set()


def test_template_boilerplate_is_dropped() -> None:
    body = (
        "<!-- comment -->\nDESCRIBE THE CHANGE BELOW AND TICK EVERY ITEM OF THE CHECKLIST.\n"
        "## Purpose\nreal words\n- [ ] tick me\n```python\ncode()\n```\n"
    )
    cleaned = clean_body(body)
    assert "real words" in cleaned
    assert "DESCRIBE" not in cleaned and "tick me" not in cleaned and "code()" not in cleaned


def test_identifiers_from_python_c_requirements_and_config() -> None:
    python = FileChange(
        "vllm/x.py",
        patch="@@ -10,0 +10,5 @@\n+    TOKENSPEED_MLA = auto()\n+def build_tokenspeed(x):\n"
        "+    def get_name(self):\n+    enable_fast_path: bool = False\n"
        '+    "VLLM_USE_FOO": lambda: 1,\n',
    )
    assert identifiers_added(python) == {
        "TOKENSPEED_MLA",
        "build_tokenspeed",
        "method:get_name",
        "enable_fast_path",
        "VLLM_USE_FOO",
    }
    cuda = FileChange("csrc/a.cu", patch="@@ -1 +1,2 @@\n+__global__ void my_kernel(float* x) {\n")
    assert identifiers_added(cuda) == {"my_kernel"}
    reqs = FileChange("requirements/cuda.txt", patch="@@ -1 +1,2 @@\n+Flash_Attn >= 2\n+-r x.txt\n")
    assert identifiers_added(reqs) == {"requirement:flash-attn"}
    yaml = FileChange("ci.yaml", patch="@@ -1 +1,2 @@\n+- label: x\n+  gpu_type: b200\n")
    assert identifiers_added(yaml) == {"gpu_type"}


def test_base_ranges_and_code_terms() -> None:
    patch = "@@ -10,6 +10,7 @@ def f():\n ctx\n+new_call(x)\n@@ -40 +41 @@\n-a\n+b\n"
    ranges = base_ranges(patch)
    assert [(r.start, r.end) for r in ranges] == [(10, 15), (40, 40)]
    assert ranges[0].overlaps(ranges[1], slack=30) and not ranges[0].overlaps(ranges[1])
    assert code_terms([FileChange("a.py", patch=patch)])["new_call"] == 1
    assert code_terms([FileChange("a.png", patch=None, binary=True)]) == {}


def test_features_round_trip_through_json() -> None:
    features = build_features(
        7,
        title="[Bugfix] Fix X",
        body="Fixes #3; see #4",
        author="alice",
        files=[FileChange("a.py", 1, 0, "@@ -1 +1,2 @@\n+def helper_one():\n")],
    )
    again = PRFeatures.from_json(features.to_json())
    assert again == features
    assert again.claimed == {3} and again.mentioned == {4}
    assert again.identifiers == {"helper_one": ["a.py"]}


def test_records_keep_what_is_usable() -> None:
    record = record_from_dict({"number": "12", "title": "t", "body": None})
    assert record.number == 12 and record.files is None and record.body == ""
    with pytest.raises(RecordError):
        record_from_dict({"title": "no number"})
    with pytest.raises(RecordError):
        record_from_dict([1, 2])
    huge = record_from_dict(
        {
            "number": 1,
            "body": "x" * 50_000,
            "files": [{"path": f"f{i}.py"} for i in range(3_000)] + [{"nope": 1}],
        }
    )
    assert len(huge.files) == MAX_FILES
    assert any("3,001 changed files" in p for p in huge.problems)
    assert any("body has 50,000 characters" in p for p in huge.problems)
    binary = record_from_dict({"number": 2, "files": [{"path": "a.bin", "patch": "\x00\x01"}]})
    assert binary.files[0].binary and binary.files[0].patch is None


def test_bots() -> None:
    assert is_bot("dependabot[bot]") and is_bot("Renovate[bot]")
    assert is_bot("ci-robot", ["ci-robot"]) and not is_bot("alice")
