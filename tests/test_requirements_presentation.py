"""Folding per-cell findings into table rows and details blocks for the comment."""

from bot.requirements.presentation import (
    detail_groups,
    folded_rows,
    table_rows,
    unaffected_names,
)

ADDED = [{"requirement": "humanize>=4", "file": "requirements/common.txt", "line": 58}]


def finding(platform, arch, resolution="ok", detail="12 packages", **extra):
    return {
        "platform": platform,
        "arch": arch,
        "python": "3.12",
        "added": [a["requirement"] for a in extra.get("added_from", [])],
        "removed": [],
        "changed": [],
        "resolution": resolution,
        "detail": detail,
        "why": ["requirements/common.txt"],
        "cached": False,
        "failing_at_base": False,
        "added_from": [],
        "removed_from": [],
        "problems": [],
        "conflicts": [],
        "compiled": [],
        **extra,
    }


def test_table_joins_architectures_of_one_platform_that_say_the_same():
    rows = table_rows(
        [
            finding("cuda", "x86_64", added_from=ADDED),
            finding("rocm", "x86_64", added_from=ADDED),
            finding("cuda", "aarch64", added_from=ADDED),
            finding("cpu", "x86_64", added_from=ADDED),
            finding("cpu", "s390x", "skipped", "no platform", added_from=ADDED),
        ]
    )
    assert [(r["platform"], r["archs"], r["added"]) for r in rows] == [
        ("cuda", ["x86_64", "aarch64"], 1),
        ("rocm", ["x86_64"], 1),
        ("cpu", ["x86_64"], 1),
        ("cpu", ["s390x"], 1),
    ]


def test_cells_with_the_same_diff_share_one_block_with_outcomes_grouped():
    findings = [
        finding("cuda", "x86_64", detail="12 packages", added_from=ADDED),
        finding("cuda", "aarch64", detail="11 packages", added_from=ADDED),
        finding("cpu", "s390x", "skipped", "uv has no --python-platform", added_from=ADDED),
        finding("rocm", "x86_64", "failed", "Because x…", added_from=ADDED),
        finding("tpu", "x86_64", "skipped", "index unreachable: h: dns error", added_from=ADDED),
        finding("xpu", "x86_64", "skipped", "index unreachable: h: dns error", added_from=ADDED),
        finding("test-cuda", "x86_64", compiled=[{"path": "requirements/test/cuda.txt"}]),
    ]
    first, second = detail_groups(findings, show_python=False)
    assert first["size"] == 6 and first["added_from"] == ADDED
    assert [c["platform"] for c in first["summary_cells"]] == ["cuda", "cpu", "rocm", "tpu"]
    assert first["more_platforms"] == 1
    assert first["statuses"] == [
        {"status": "ok", "size": 2},
        {"status": "skipped", "size": 3},
        {"status": "failed", "size": 1},
    ]
    outcomes = [(o["status"], o["detail"], o["cells"]) for o in first["resolutions"]]
    assert outcomes[0] == ("ok", "", [{"platform": "cuda", "archs": ["x86_64", "aarch64"]}])
    assert outcomes[3] == (
        "skipped",
        "index unreachable: h: dns error",
        [{"platform": "tpu", "archs": ["x86_64"]}, {"platform": "xpu", "archs": ["x86_64"]}],
    )
    assert second["size"] == 1 and second["compiled"]


def test_a_cell_with_nothing_to_say_has_no_block_and_notes_survive():
    findings = [
        finding("cuda", "x86_64"),
        finding("cpu", "x86_64", detail="3 packages; not passed to uv: -e ."),
        finding("cuda", "x86_64", python="3.13", detail="3 packages", added_from=ADDED),
    ]
    plain, python = detail_groups(findings, show_python=True)
    assert plain["resolutions"][0]["detail"] == "not passed to uv: -e ."
    assert python["cells"] == [{"platform": "cuda", "archs": ["x86_64 py3.13"]}]


def test_unaffected_targets_are_named_once_with_archs_only_when_some_were_reached():
    labels = ["cuda/x86_64", "cuda/aarch64", "cuda/x86_64", "cuda/aarch64", "cpu/ppc64le"]
    archs = {"cuda": ("x86_64", "aarch64"), "cpu": ("x86_64", "ppc64le")}
    assert unaffected_names(labels, archs) == ["cuda", "cpu (ppc64le)"]


def test_long_package_lists_are_cut_with_a_count_of_the_rest():
    many = [{"requirement": f"p{i}", "file": "r.txt", "line": i} for i in range(1, 31)]
    (group,) = detail_groups([finding("cuda", "x86_64", added_from=many)], show_python=False)
    assert len(group["added_from"]) == 25 and group["hidden_changes"] == 5


def test_cells_with_nothing_to_say_fold_into_one_line_with_their_reasons():
    findings = [
        finding("cuda", "x86_64", why=["setup.py"], only_watched=True, detail="30 packages"),
        finding("cpu", "s390x", "skipped", "uv has no --python-platform for s390x"),
        finding("rocm", "x86_64", added_from=ADDED),
        finding("tpu", "x86_64", "failed", "no solution"),
    ]
    folded = folded_rows(findings, show_python=False)
    assert folded["size"] == 2
    assert folded["why"] == ["requirements/common.txt", "setup.py"]
    assert folded["reasons"] == ["uv has no --python-platform for s390x"]
    assert [r["platform"] for r in table_rows(findings)] == ["rocm", "tpu"]
    assert [g["cells"][0]["platform"] for g in detail_groups(findings, False)] == ["rocm", "tpu"]
