"""Clusters of likely duplicates for the maintainer's sweep."""

from __future__ import annotations

from bot.duplicates.clusters import clusters


def test_pairs_join_into_groups_largest_first() -> None:
    pairs = [(5, 6), (1, 2), (2, 3), (3, 1), (9, 9)]
    assert clusters(pairs) == [[1, 2, 3], [5, 6]]
    assert clusters([]) == []
