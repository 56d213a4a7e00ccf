"""YAML from a PR is bounded before anything is built from it: aliases, depth, expanded size."""

from __future__ import annotations

import pytest
import yaml

from bot.core.bounded_yaml import MAX_EXPANDED_NODES, YamlRejected, load_bounded


def alias_bomb(levels: int) -> str:
    """Each level lists the previous one twice: 2**levels leaves from a few hundred bytes."""
    lines = ["a0: &a0 [x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_with_its_line():
    with pytest.raises(YamlRejected) as caught:
        load_bounded(alias_bomb(30))
    assert f"expands to more than {MAX_EXPANDED_NODES:,} nodes" in caught.value.message
    # The line of the first level whose tree passes the bound, long before the 25th.
    assert caught.value.line is not None and 2**caught.value.line > MAX_EXPANDED_NODES / 4
    assert caught.value.line < 30


def test_aliases_deep_nesting_and_recursion_are_refused():
    with pytest.raises(YamlRejected, match="more than 3 YAML aliases"):
        load_bounded("a: &a 1\nb: [*a, *a, *a, *a]\n", max_aliases=3)
    with pytest.raises(YamlRejected, match="nested more than"):
        load_bounded("[" * 5000 + "]" * 5000)
    with pytest.raises(YamlRejected, match="contains it"):
        load_bounded("&a [*a]")


def test_ordinary_documents_load_as_safe_load_does():
    text = "base: &b {image: x, env: {A: 1}}\nsteps:\n  - <<: *b\n    key: one\n  - *b\n"
    data, node = load_bounded(text)
    assert data == yaml.safe_load(text)
    assert node is not None and node.start_mark.line == 0
    assert load_bounded("") == (None, None)


def test_syntax_errors_stay_yaml_errors():
    with pytest.raises(yaml.YAMLError):
        load_bounded("a: [1, 2\n")
