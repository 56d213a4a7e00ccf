"""A CI engine is one module of bot/engines/ that registers itself: no list to edit, no
if/elif on engine names anywhere else."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import bot.engines
from bot.engines.base import ENGINES, EngineError, load_engines, make_engine
from bot.runtime.settings import CiSettings, Settings

BOT = Path(bot.engines.__file__).resolve().parent.parent


def test_every_module_of_the_package_registers_its_engine():
    assert {"buildkite", "actions"} <= set(load_engines())


def test_a_new_module_is_a_new_engine(tmp_path, monkeypatch):
    (tmp_path / "local_runner.py").write_text(
        "from bot.engines.base import register\n"
        "class LocalRunner:\n"
        "    name = 'local_runner'\n"
        "    def __init__(self, settings):\n"
        "        self.settings = settings\n"
        "@register('local_runner')\n"
        "def from_settings(settings, client=None):\n"
        "    return LocalRunner(settings)\n"
    )
    monkeypatch.setattr(bot.engines, "__path__", [*bot.engines.__path__, str(tmp_path)])
    try:
        settings = Settings(data_dir=tmp_path)
        engine = make_engine("local_runner", settings)
        assert engine.name == "local_runner" and engine.settings is settings
    finally:
        ENGINES.pop("local_runner", None)
        sys.modules.pop("bot.engines.local_runner", None)


def test_an_engine_whose_settings_are_missing_says_which(tmp_path):
    with pytest.raises(EngineError, match="PRBOT_BUILDKITE_"):
        make_engine("buildkite", Settings(data_dir=tmp_path, ci=CiSettings()))
    with pytest.raises(EngineError, match="installation"):
        make_engine("actions", Settings(data_dir=tmp_path), None)


def test_no_code_outside_the_engines_compares_engine_names():
    """An ``if name == "buildkite"`` outside bot/engines/ is a list a new engine must edit."""
    names = set(load_engines())
    found = []
    for path in sorted(BOT.rglob("*.py")):
        if path.is_relative_to(BOT / "engines") or path.is_relative_to(BOT / "testing"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Constant) and side.value in names
                for side in [node.left, *node.comparators]
            ):
                found.append(f"{path.relative_to(BOT.parent)}:{node.lineno}")
    assert found == []


def test_the_gpu_job_steps_know_no_engine_by_module():
    """bot/worker/ci/ (dispatch, results, CI signal) reaches every engine through the
    interface of bot/engines/base.py: importing an engine's own module there is a feature
    only that engine gets (CI signal once read Buildkite's builds by name)."""
    found = []
    for path in sorted((BOT / "worker" / "ci").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            found += [
                f"{path.relative_to(BOT.parent)}:{node.lineno} {module}"
                for module in modules
                if module.startswith("bot.engines.") and module != "bot.engines.base"
            ]
    assert found == []
