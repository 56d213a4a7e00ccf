"""The ``checks.duplicates`` rule model: thresholds, hot and ignored paths, bot accounts."""

from __future__ import annotations

from pydantic import Field

from bot.core.sections import CheckRules
from bot.duplicates.scoring import (
    DEFAULT_HOT_PATHS,
    TEXT_ONLY_ALERT_CHANCE,
    ScoringConfig,
)


class DuplicatesRules(CheckRules):
    # A candidate at or above this score, with evidence about the goal, is a likely duplicate.
    likely_duplicate_score: float = Field(0.6, ge=0, le=1)
    # For a pair without file data on one side (wording only), the bar on its alert chance:
    # the top candidate judged against the runner-up (bot.duplicates.scoring.alert_chance).
    # The default is chosen on real duplicate PRs; the precision/recall curve to choose
    # another is in docs/benchmarks/duplicates_real.md. It was text_only_likely_duplicate_score,
    # a bar on the pair's score (0.15): renamed with its meaning, so rules that set the old key
    # are refused with its name rather than read as a chance.
    text_only_alert_chance: float = Field(TEXT_ONLY_ALERT_CHANCE, ge=0, le=1)
    # Candidates below this score are not listed unless their edits overlap.
    min_score: float = Field(0.3, ge=0, le=1)
    # How many candidates to list at most, and how many before the rest is folded.
    top: int = Field(10, ge=1, le=100)
    show: int = Field(3, ge=1, le=100)
    # Files most PRs touch (changelogs, lockfiles, __init__.py): shared, they count for little.
    hot_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_HOT_PATHS))
    # Paths left out of the comparison altogether (generated files).
    ignore_paths: list[str] = Field(default_factory=list)
    # Accounts whose PRs are never compared, beyond any "...[bot]" login.
    bots: list[str] = Field(default_factory=list)

    def scoring_config(self) -> ScoringConfig:
        return ScoringConfig(
            likely_duplicate=self.likely_duplicate_score,
            text_only_alert_chance=self.text_only_alert_chance,
            min_score=self.min_score,
            hot_paths=tuple(self.hot_paths),
            ignore_paths=tuple(self.ignore_paths),
            bots=tuple(self.bots),
        )
