"""Bounds on the work one file of a PR may cause, shared by every parser.

A PR controls the size and shape of every file prbot reads, so each parse is bounded here,
once: the byte size a parser accepts, and the number of AST nodes a walk visits. Crossing a
bound raises :class:`InputRejected`, whose message is the one-line finding ("``vllm/x.py`` is
75.0 MB, over the 4 MB limit for Python source; not read"), never a traceback.
"""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Iterator

# Per-parser byte limits. The largest real vLLM files (0.21: csrc headers, lock-like
# requirement files, the attention docs) sit far below these.
# Python: CPython's parser peaks at about 500 bytes of memory per byte of dense source (a 4 MB
# list literal: 1.9 GB; 7.9 MB of it cost a worker 3.1 GB), so a module is bounded in bytes
# and, before it is parsed, in tokens: 500,000 tokens (about 2 MB of ordinary code) kept one
# parse of the densest shapes tried (a list literal, 62,000 calls) under 350 MB peak. The
# largest real vLLM modules are far below both.
MAX_PYTHON_SOURCE_BYTES = 2_000_000
MAX_PYTHON_TOKENS = 500_000
MAX_REQUIREMENTS_BYTES = 1_000_000
MAX_DOC_BYTES = 4_000_000
MAX_YAML_BYTES = 2_000_000
# Dockerfiles and CI scripts an integration rule reads for install commands (vLLM 0.33: 60).
MAX_INSTALL_SCRIPTS = 500

# An AST walk visits at most this many nodes of one file (a 4 MB module has about 1.5M).
MAX_AST_NODES = 2_000_000


# An upper bound on Python's tokens (strings and comments count their words): cheap, linear.
_TOKEN = re.compile(r"\w+|[^\w\s]")


class InputRejected(ValueError):
    """A file was not parsed because of a bound or a parse failure; ``str()`` is the finding."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"`{path}` {reason}")
        self.path = path
        self.reason = reason


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def check_size(path: str, data: str | bytes, limit: int, kind: str) -> None:
    """Raise :class:`InputRejected` when ``data`` is over ``limit`` bytes for a ``kind`` file."""
    size = len(data.encode("utf-8", "replace")) if isinstance(data, str) else len(data)
    if size > limit:
        raise InputRejected(
            path, f"is {_megabytes(size)}, over the {_megabytes(limit)} limit for {kind}; not read"
        )


def parse_python(source: str, path: str, *, limit: int = MAX_PYTHON_SOURCE_BYTES) -> ast.Module:
    """``ast.parse`` with the size bound, and every way it can fail turned into one finding.

    Deeply nested code makes CPython's parser raise ``RecursionError`` or ``MemoryError``
    (or a ``SyntaxError`` "too many nested parentheses"); none of them may escape a check.
    """
    check_size(path, source, limit, "Python source")
    tokens = 0
    for _ in _TOKEN.finditer(source):
        tokens += 1
        if tokens > MAX_PYTHON_TOKENS:
            limit_text = f"{MAX_PYTHON_TOKENS:,}"
            raise InputRejected(
                path, f"has over {limit_text} tokens, the limit for Python source; not read"
            )
    # A parse allocates many small nodes that are never garbage; pausing the cyclic
    # collector meanwhile saves a large share of the time on big modules.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        raise InputRejected(path, f"does not parse{where}: {exc.msg}") from None
    except RecursionError:
        raise InputRejected(path, "is nested too deeply to parse") from None
    except MemoryError:
        # CPython's parser also says MemoryError when its stack of nested brackets overflows.
        raise InputRejected(
            path, "could not be parsed in the worker's memory (too large or nested too deeply)"
        ) from None
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        raise InputRejected(path, f"does not parse: {exc}") from None
    finally:
        if enabled:
            gc.enable()


def walk(tree: ast.AST, path: str, *, limit: int = MAX_AST_NODES) -> Iterator[ast.AST]:
    """Every node under ``tree``, depth first and iteratively (``ast.NodeVisitor`` recurses).

    Raises :class:`InputRejected` after ``limit`` nodes.
    """
    queue = [tree]
    seen = 0
    while queue:
        node = queue.pop()
        seen += 1
        if seen > limit:
            raise InputRejected(path, f"has over {limit:,} syntax nodes; not read in full")
        yield node
        queue.extend(ast.iter_child_nodes(node))
