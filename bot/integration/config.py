"""The ``checks.integration`` rule model: co-change rules, validated with pydantic."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.core.sections import CheckRules, valid_regex


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    where: str  # what a reviewer would call it: "CUDA priority lists"
    paths: list[str] = Field(min_length=1)  # globs read at the PR's head
    # How the symbol must appear in one real entry of a file (a Python name, attribute chain
    # or string; a YAML key or value); "{symbol}" is replaced by the (escaped) new name.
    pattern: str = r"\b{symbol}\b"
    when: str | None = None  # applies only to symbols matching this regex
    unless: str | None = None  # never applies to symbols matching this regex
    # The expectation does not apply when the new name is used at head in one of these
    # paths: the repository wires it another way (another platform's selector, a model that
    # picks its own backend).
    unless_used_in: list[str] = Field(default_factory=list)
    # Other names the expected files use for a symbol (``FLASH_ATTN: [fa2, fa3]``) ...
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    # ... and Python files whose dict literals map such names to the symbol, or to the class
    # its registry entry names (a benchmark runner's own name table), read at head.
    aliases_from: list[str] = Field(default_factory=list)
    # imports rules: files whose install commands (``pip install X``, ``uv pip install X``)
    # also declare a distribution: Dockerfiles, CI install scripts.
    installed_by: list[str] = Field(default_factory=list)

    @field_validator("when", "unless")
    @classmethod
    def _conditions_compile(cls, value: str | None) -> str | None:
        return valid_regex(value)

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str) -> str:
        if "{symbol}" not in value:
            raise ValueError("pattern must contain {symbol}")
        valid_regex(value.replace("{symbol}", "X"))
        return value

    def applies_to(self, symbol: str) -> bool:
        if self.when and not re.search(self.when, symbol):
            return False
        return not (self.unless and re.search(self.unless, symbol))

    def regex(self, name: str) -> re.Pattern[str]:
        return re.compile(self.pattern.replace("{symbol}", re.escape(name)))


class OptIn(BaseModel):
    """How a symbol rule tells an opt-in registry member: its module needs a package the
    code probes for (``find_spec``) and no requirement file installs by default."""

    model_config = ConfigDict(extra="forbid")

    # A package declared in one of these (not only as an optional extra) is installed by
    # default, so needing it does not make a member opt-in.
    requirements: list[str] = Field(min_length=1)
    first_party: list[str] = Field(default_factory=list)
    distributions: dict[str, str | list[str]] = Field(default_factory=dict)

    def distributions_for(self, module: str) -> list[str]:
        mapped = self.distributions.get(module, [])
        return [mapped] if isinstance(mapped, str) else list(mapped)


class IntegrationRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    kind: Literal["symbol", "imports"] = "symbol"
    paths: list[str] = Field(min_length=1)  # where new symbols / imports are looked for
    # symbol rules: a regex over added lines whose first group is the new name.
    added: str | None = None
    # How code elsewhere refers to a new name, for `unless_used_in` (one entry must match):
    # `AttentionBackendEnum\.{symbol}\b` keeps another enum's member of the same name out.
    referenced_as: str = r"\b{symbol}\b"
    expect: list[Expectation] = Field(min_length=1)
    # symbol rules: a new member that is opt-in (see OptIn) gets its unmet expectations as
    # notes, not as missing items: the project leaves such members out of automatic
    # selection on purpose.
    opt_in: OptIn | None = None
    # imports rules: top-level modules that are the project's own, and import -> dist names
    # for the names no packaging metadata at hand explains.
    first_party: list[str] = Field(default_factory=list)
    distributions: dict[str, str | list[str]] = Field(default_factory=dict)
    # Modules never reported: typing-only names, modules shipped inside another package.
    ignore: list[str] = Field(default_factory=list)

    @field_validator("referenced_as")
    @classmethod
    def _reference_has_symbol(cls, value: str) -> str:
        if "{symbol}" not in value:
            raise ValueError("referenced_as must contain {symbol}")
        valid_regex(value.replace("{symbol}", "X"))
        return value

    @field_validator("added")
    @classmethod
    def _added_has_group(cls, value: str | None) -> str | None:
        if value is not None and re.compile(valid_regex(value) or "").groups < 1:
            raise ValueError("added must capture the new name in a group")
        return value

    def distributions_for(self, module: str) -> list[str]:
        mapped = self.distributions.get(module, [])
        return [mapped] if isinstance(mapped, str) else list(mapped)


class IntegrationRules(CheckRules):
    rules: list[IntegrationRule] = Field(default_factory=list)
