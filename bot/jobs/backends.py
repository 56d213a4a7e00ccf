"""Which registered backends live in which file, read from the registry enums with ``ast``.

vLLM registers backends as enum members whose value is the class path
(``TOKENSPEED_MLA = "vllm.v1.attention.backends.mla.tokenspeed_mla.TokenspeedMLABackend"``),
in ``AttentionBackendEnum`` and, for MLA prefill, ``MLAPrefillBackendEnum``. Knowing the
member for a changed file is what restricts a kernel benchmark to the touched backends.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from bot.core.limits import InputRejected, parse_python


@dataclass(frozen=True)
class RegisteredBackend:
    enum: str  # AttentionBackendEnum
    name: str  # TOKENSPEED_MLA
    class_path: str  # vllm.v1.attention.backends.mla.tokenspeed_mla.TokenspeedMLABackend

    @property
    def module_path(self) -> str:
        """The file the class lives in: ``vllm/v1/attention/backends/mla/tokenspeed_mla.py``."""
        module = self.class_path.rsplit(".", 1)[0]
        return module.replace(".", "/") + ".py"


def _string(node: ast.expr) -> str | None:
    # A value may be wrapped in parentheses over lines; implicit concatenation is one Constant.
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def registered_backends(
    source: str, path: str, enums: Iterable[str]
) -> tuple[list[RegisteredBackend], list[str]]:
    """Members of the named enum classes in ``source``, and problems (never a raise)."""
    wanted = set(enums)
    try:
        tree = parse_python(source, path)
    except InputRejected as exc:
        return [], [str(exc)]
    found = []
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name in wanted):
            continue
        for item in node.body:
            if (
                isinstance(item, ast.Assign)
                and len(item.targets) == 1
                and isinstance(item.targets[0], ast.Name)
            ):
                value = _string(item.value)
                if value and "." in value:
                    found.append(RegisteredBackend(node.name, item.targets[0].id, value))
    return found, []


def backends_by_file(backends: Iterable[RegisteredBackend]) -> dict[str, list[str]]:
    """``{file path: [member names]}``, members in registry order."""
    by_file: dict[str, list[str]] = {}
    for backend in backends:
        names = by_file.setdefault(backend.module_path, [])
        if backend.name not in names:
            names.append(backend.name)
    return by_file
