"""The docs say what the code does: generated blocks are current, the README stays a page a
newcomer reads, every link leads somewhere, the architecture diagram names every folder, and
every setting is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.cli import reference

ROOT = Path(__file__).resolve().parent.parent
README_MAX_BYTES = 16 * 1024
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", sorted(reference.GENERATED))
def test_generated_reference_matches_the_code(path):
    assert (ROOT / path).read_text() == reference.expected(path), (
        f"{path} is out of date: run `uv run python -m bot.cli.reference --write`"
    )


def test_the_readme_is_a_page_a_newcomer_reads():
    assert len((ROOT / "README.md").read_bytes()) <= README_MAX_BYTES


def _pages() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "SECURITY.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "checks").glob("*.md")),
    ]


def test_every_relative_link_in_the_docs_leads_to_a_file():
    broken = []
    for page in _pages():
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_architecture_diagram_names_every_folder_of_bot_and_no_other():
    text = (ROOT / "docs" / "architecture.md").read_text()
    diagram = text.split("```\n", 2)[1]
    named = set(re.findall(r"\bbot/(\w+)/", diagram))
    folders = {p.name for p in (ROOT / "bot").iterdir() if (p / "__init__.py").exists()}
    assert named == folders - {"_data"}
    root_modules = {p.name for p in (ROOT / "bot").glob("*.py")} - {"__init__.py", "__main__.py"}
    assert {m for m in root_modules if f"bot/{m}" not in diagram} == set()


def test_every_setting_the_service_reads_is_documented_and_no_other():
    settings = (ROOT / "bot" / "runtime" / "settings.py").read_text()
    read = set(re.findall(r'"(PRBOT_[A-Z_]+)"', settings))
    documented = set(
        re.findall(r"`(PRBOT_[A-Z_]+)`", (ROOT / "docs" / "configuration.md").read_text())
    )
    assert read - documented == set(), "read by bot/runtime/settings.py, not in the docs"
    assert documented - read == set(), "in docs/configuration.md, read nowhere"
