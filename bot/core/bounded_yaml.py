"""YAML a PR wrote, read with bounds on what it may make before anything is built from it.

A few nested aliases expand exponentially: ``b: [*a, *a]`` twenty times over is a page of
text whose tree, as anything that walks it sees it (a merge, a validator, a copy), has a
million leaves. So the composer counts, for every node, the size of its tree with aliases
expanded, and refuses a document past ``MAX_EXPANDED_NODES``, ``max_aliases`` or
``MAX_DEPTH`` before one Python object is constructed; a recursive alias (``&a [*a]``) is
refused too. Everything a PR's YAML reaches (the rule file, Buildkite step files, files an
integration rule reads) is loaded here.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent

MAX_ALIASES = 1_000
MAX_DEPTH = 100
# Plain YAML has about one node per 20 characters (rules/vllm.yaml: 905 nodes in 18 KB), so a
# file at the 2 MB cap (MAX_YAML_BYTES) without aliases stays near a tenth of this.
MAX_EXPANDED_NODES = 1_000_000


class YamlRejected(ValueError):
    """A document that is not read; ``line`` (1-based) is where reading stopped."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message if line is None else f"{message} (line {line})")
        self.line = line
        self.message = message


class _BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` whose composer counts depth, aliases and expanded nodes."""

    def __init__(self, stream: str, max_aliases: int, max_nodes: int) -> None:
        super().__init__(stream)
        self._max_aliases = max_aliases
        self._max_nodes = max_nodes
        self._depth = 0
        self._aliases = 0
        # id(node) -> its tree's size with aliases expanded; the nodes live in the tree.
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, AliasEvent):
            self._aliases += 1
            if self._aliases > self._max_aliases:
                raise YamlRejected(line, f"more than {self._max_aliases:,} YAML aliases")
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:  # its anchor is still being composed
                raise YamlRejected(line, "a YAML alias refers to a node that contains it")
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlRejected(line, f"YAML nested more than {MAX_DEPTH} levels deep")
        node = super().compose_node(parent, index)
        self._depth -= 1
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes[id(child)] for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        if size > self._max_nodes:
            raise YamlRejected(line, f"YAML that expands to more than {self._max_nodes:,} nodes")
        self._sizes[id(node)] = size
        return node


def load_bounded(
    text: str, *, max_aliases: int = MAX_ALIASES, max_nodes: int = MAX_EXPANDED_NODES
) -> tuple[Any, yaml.Node | None]:
    """``yaml.safe_load`` of one document, and its node tree (for line numbers).

    Raises :class:`YamlRejected` past a bound, ``yaml.YAMLError`` when it does not parse.
    """
    loader = _BoundedLoader(text, max_aliases, max_nodes)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node
