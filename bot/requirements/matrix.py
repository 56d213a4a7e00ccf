"""The matrix from rules: targets (platforms and sets) × architectures × Python versions."""

from __future__ import annotations

from dataclasses import dataclass

from bot.requirements.config import DEFAULT_PYTHON_PLATFORMS, RequirementsRules, TargetRules


@dataclass(frozen=True)
class Target:
    """A platform or a requirement set, with what it inherits from its platform resolved."""

    name: str
    kind: str
    rules: TargetRules
    group: str  # the platform whose pins it must agree with (itself for a platform)
    archs: tuple[str, ...]

    def python_platform(self, arch: str) -> tuple[str | None, bool]:
        """(uv --python-platform, known); unknown means uv cannot target this arch."""
        if arch in self.rules.python_platforms:
            value = self.rules.python_platforms[arch]
            return value, value is not None
        value = DEFAULT_PYTHON_PLATFORMS.get(arch)
        return value, value is not None


@dataclass(frozen=True)
class Cell:
    target: Target
    arch: str
    python: str

    @property
    def label(self) -> str:
        return f"{self.target.name}/{self.arch}"


def build_targets(rules: RequirementsRules) -> list[Target]:
    targets = []
    for name, platform in rules.platforms.items():
        archs = tuple(platform.archs or ["x86_64"])
        targets.append(Target(name, platform.kind or "runtime", platform, name, archs))
    for name, rule_set in rules.sets.items():
        parent = rules.platforms.get(rule_set.platform or "")
        archs = tuple(rule_set.archs or (parent.archs if parent else []) or ["x86_64"])
        group = rule_set.platform or name
        targets.append(Target(name, rule_set.kind or "other", rule_set, group, archs))
    return targets


def cells(targets: list[Target], python_versions: list[str]) -> list[Cell]:
    return [
        Cell(target, arch, python)
        for target in targets
        for arch in target.archs
        for python in python_versions or ["3.12"]
    ]
