"""PR features: JSON round trip, bots."""

from __future__ import annotations

from bot.duplicates.embeddings import pack, unpack
from bot.duplicates.features import PRFeatures, build_features, is_bot
from bot.duplicates.records import FileChange


def test_features_round_trip_through_json() -> None:
    features = build_features(
        7,
        title="[Bugfix] Fix X",
        body="Fixes #3; see #4",
        author="alice",
        files=[FileChange("a.py", 1, 0, "@@ -1 +1,2 @@\n+def helper_one():\n")],
    )
    again = PRFeatures.from_json(features.to_json())
    assert again == features
    assert again.claimed == {3} and again.mentioned == {4}
    assert again.identifiers == {"helper_one": ["a.py"]}


def test_bots() -> None:
    assert is_bot("dependabot[bot]") and is_bot("Renovate[bot]")
    assert is_bot("ci-robot", ["ci-robot"]) and not is_bot("alice")


def test_the_embedding_round_trips_and_unpacks_once() -> None:
    features = build_features(8, title="Fix X", embedding=pack([0.6, 0.8]))
    again = PRFeatures.from_json(features.to_json())
    assert again.embedding == features.embedding
    assert again.vector == again.vector == unpack(features.embedding)
    assert "embedding" not in build_features(9, title="Fix X").to_json()
    assert build_features(9).vector == ()
