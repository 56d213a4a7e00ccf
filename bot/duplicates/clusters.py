"""The maintainer's sweep: which open PRs are the same work, as groups."""

from __future__ import annotations

from collections.abc import Iterable


def clusters(pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Connected groups of PR numbers (union-find over likely-duplicate pairs), largest first."""
    parent: dict[int, int] = {}

    def find(n: int) -> int:
        parent.setdefault(n, n)
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in pairs:
        root_a, root_b = find(a), find(b)
        if root_a != root_b:
            parent[max(root_a, root_b)] = min(root_a, root_b)
    groups: dict[int, list[int]] = {}
    for n in parent:
        groups.setdefault(find(n), []).append(n)
    return sorted((sorted(g) for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g))
