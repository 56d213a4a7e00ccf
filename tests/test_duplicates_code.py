"""Code features: identifiers the diff adds, base line ranges, added-code words."""

from __future__ import annotations

from bot.duplicates.code import base_ranges, changed_definitions, code_terms, identifiers_added
from bot.duplicates.records import FileChange


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


def test_edited_names_are_not_new_identifiers() -> None:
    bump = FileChange(
        "requirements/cuda.txt",
        patch="@@ -12 +12 @@\n-flashinfer-python==0.5.2\n+flashinfer-python==0.5.3\n",
    )
    assert identifiers_added(bump) == set()
    signature = FileChange(
        "vllm/a.py",
        patch="@@ -5 +5,2 @@\n-def prepare_inputs(self, out):\n+def prepare_inputs(self, out, n):\n"
        "+def brand_new_helper():\n",
    )
    assert identifiers_added(signature) == {"brand_new_helper"}


def test_changed_definitions_come_from_the_hunk_headers() -> None:
    patch = (
        "@@ -58,3 +58,4 @@ class AttentionBackendEnum(Enum):\n ctx\n+    X = 1\n"
        "@@ -90 +91 @@ def get_attn_backend(head_size: int):\n-a\n+b\n"
        "@@ -120,2 +121,2 @@ def get_attn_backend(head_size: int):\n-c\n+d\n"
        "@@ -0,0 +1,4 @@\n+new\n"
        "@@ -10,2 +10,3 @@ static void launch_kernel(int a,\n+x\n"
        "@@ -1 +1 @@ if (x) {\n+y\n"
    )
    assert changed_definitions(patch) == [
        "AttentionBackendEnum",
        "get_attn_backend",
        "launch_kernel",
    ]
    assert changed_definitions(None) == [] and changed_definitions("not a diff") == []
