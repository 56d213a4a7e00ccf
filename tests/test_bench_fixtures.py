"""The pipeline benchmarks' generated repository and local index (benchmarks/_ml_repo.py,
benchmarks/_local_index.py): rules that load over the built-in vLLM set and send uv only to
the local index, requirement files whose every package the index publishes, and an index
that serves PEP 503 pages with the caching headers uv relies on."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import httpx

from bot.report.rules import load_text

ROOT = Path(__file__).resolve().parents[1]


def _bench_module(name: str):  # noqa: ANN202 - a module loaded from a path
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


ml_repo = _bench_module("_ml_repo")
local_index = _bench_module("_local_index")
INDEX_URL = "http://127.0.0.1:9/simple"


def _named_packages(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(re.match(r"[A-Za-z0-9._-]+", line).group(0))
    return names


def test_fixture_rules_extend_vllm_and_send_uv_only_to_the_local_index() -> None:
    rules = load_text(ml_repo.rules_file(INDEX_URL), ".github/prbot.yml")
    requirements = rules.checks.requirements
    assert requirements.uv_options == ["--index-url", INDEX_URL]
    targets = {**requirements.platforms, **requirements.sets}
    assert {"cuda", "rocm", "cpu", "xpu", "tpu", "test-cuda"} <= set(targets)
    for name, target in targets.items():
        options = " ".join(target.uv_options)
        assert "--torch-backend" not in options and "https://" not in options, name
    # The rest of the vLLM set is still there: every check has its rules.
    assert rules.checks.generated_docs.docs[0].path == ml_repo.DOC
    assert any(rule.name == "attention-backend" for rule in rules.checks.integration.rules)


def test_every_required_package_is_on_the_local_index() -> None:
    published = set(ml_repo.index_packages())
    files = ml_repo.requirement_files()
    assert "-r common.txt" in files["requirements/cuda.txt"]
    assert 'platform_machine == "x86_64"' in files[ml_repo.COMMON_REQUIREMENTS]
    for path, text in files.items():
        assert _named_packages(text) <= published, path


def test_a_pr_adds_a_backend_and_moves_a_requirement_bound() -> None:
    tree = ml_repo.base_tree(ml_repo.RepoShape(60), INDEX_URL)
    change = ml_repo.pr_change(tree, number=7, variant=0)
    assert 'BENCH_MLA_7 = "vllm.v1.attention.backends.mla.bench_mla_7.' in change[ml_repo.REGISTRY]
    assert "AttentionBackendEnum.BENCH_MLA_7" in change["vllm/platforms/cuda.py"]
    assert change[ml_repo.COMMON_REQUIREMENTS] != tree[ml_repo.COMMON_REQUIREMENTS]
    assert (
        change[ml_repo.COMMON_REQUIREMENTS]
        != ml_repo.pr_change(tree, 8, 1)[ml_repo.COMMON_REQUIREMENTS]
    )
    assert sum(path.startswith("vllm/model_executor/models/") for path in change) == 6


def test_the_local_index_serves_pages_and_wheels_with_caching_headers(tmp_path: Path) -> None:
    written = local_index.write_index(tmp_path, {"Serving_Lib": {"1.0": [], "1.1": ["x>=1"]}})
    assert written == 2
    server = local_index.IndexServer(tmp_path).start()
    try:
        page = httpx.get(f"{server.url}/serving-lib/", timeout=10)
        assert page.status_code == 200
        assert page.headers["cache-control"] == "max-age=600, public"
        links = re.findall(r'href="([^"]+)"', page.text)
        assert [link.rsplit("/", 1)[-1] for link in links] == [
            "Serving_Lib-1.0-py3-none-any.whl",
            "Serving_Lib-1.1-py3-none-any.whl",
        ]
        wheel = httpx.get(f"{server.url}/serving-lib/{links[0]}", timeout=10)
        assert wheel.status_code == 200 and wheel.content[:2] == b"PK"
        assert "immutable" in wheel.headers["cache-control"]
        assert server.requests_served == 2
    finally:
        server.stop()
