"""The ``checks.requirements`` rule block: the platform × architecture matrix and uv options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.core.sections import CheckRules

# uv's --python-platform for the architectures it knows; others must be declared per target
# (or set to null, which skips resolution for that architecture with a reason).
DEFAULT_PYTHON_PLATFORMS = {
    "x86_64": "x86_64-manylinux_2_28",
    "aarch64": "aarch64-manylinux_2_28",
}

TargetKind = Literal["runtime", "build", "test", "docs", "other"]


class TargetRules(BaseModel):
    """One platform (cuda, rocm…) or one requirement set (build, test, docs)."""

    model_config = ConfigDict(extra="forbid")

    entries: list[str] = Field(min_length=1)
    # Files applied as `-c` to the entries (e.g. test/cuda.in is compiled with -c cuda.txt).
    constraints: list[str] = Field(default_factory=list)
    # Empty: the architectures of `platform`, else x86_64 only.
    archs: list[str] = Field(default_factory=list)
    # The platform a set belongs to: its pins must agree with that platform's.
    platform: str | None = None
    kind: TargetKind | None = None
    # arch -> uv --python-platform; null means uv cannot target it (resolution is skipped).
    python_platforms: dict[str, str | None] = Field(default_factory=dict)
    uv_options: list[str] = Field(default_factory=list)
    resolve: bool = True
    # Whether the check's `watch` files (setup.py) reach this target. A docs set installs its
    # own lock and never runs setup.py: listing setup.py as why its cell is affected is untrue.
    watched: bool = True


class RequirementsRules(CheckRules):
    """Rules of the requirements check. An empty matrix turns the check off (``skip``)."""

    python_versions: list[str] = Field(default_factory=lambda: ["3.12"])
    platforms: dict[str, TargetRules] = Field(default_factory=dict)
    sets: dict[str, TargetRules] = Field(default_factory=dict)
    # Other paths whose change makes the check run (setup.py, Dockerfiles reading the files).
    watch: list[str] = Field(default_factory=list)
    # Where compiled (`uv pip compile`) outputs may live.
    compiled: list[str] = Field(default_factory=lambda: ["requirements/**/*.txt"])
    # Requirement files: a changed one that no platform or set reaches is still listed.
    files: list[str] = Field(
        default_factory=lambda: [
            "requirements/**/*.txt",
            "requirements/**/*.in",
            "**/requirements*.txt",
            "**/requirements*.in",
        ]
    )
    # Files searched for the path of such a file, to say what installs it (Dockerfiles, CI).
    mentions: list[str] = Field(default_factory=list)
    # uv options added to every run, e.g. `--no-index --find-links DIR` for offline use.
    uv_options: list[str] = Field(default_factory=list)
    resolve: bool = True
    # Re-run a stale compiled file's recorded `uv pip compile` command and show the diff.
    rerun_compiled: bool = False
    uv_timeout_seconds: float = Field(default=180.0, gt=0)
    uv_http_timeout_seconds: int = Field(default=30, gt=0)
    # How long a cached failure stands before uv is asked again (successes are kept).
    uv_failure_cache_seconds: float = Field(default=3600.0, ge=0)
    max_parallel: int = Field(default=4, ge=1, le=32)

    @model_validator(mode="after")
    def _sets_name_known_platforms(self) -> RequirementsRules:
        clash = set(self.platforms) & set(self.sets)
        if clash:
            raise ValueError(f"name used both as platform and set: {sorted(clash)[0]}")
        for name, target in self.sets.items():
            if target.platform is not None and target.platform not in self.platforms:
                raise ValueError(f"set {name!r} names unknown platform {target.platform!r}")
        return self
