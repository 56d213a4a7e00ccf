"""Opt-in registry members: backends a project leaves out of automatic selection on purpose.

vLLM's CUDA priority lists choose a backend when the user names none, so every backend
there must work on a default install. ``HPC_ATTN`` needs Tencent's ``hpc`` package and
``B12X`` the ``b12x`` package (``pip install vllm[b12x]``); neither is installed by
default, and the code says so by probing for them (``find_spec``) before use. Such a
backend is only ever selected by explicit configuration, so "not yet in the CUDA priority
lists" is not a gap. The signal read here, all in the head tree: the member's module, or a
name it imports from another file of the repository, probes for a package that no
requirement file declares except as an optional extra. Across vLLM 0.17-0.33 every
backend it marks is absent from the CUDA lists; the backends in those lists probe only for
packages the CUDA requirements declare (``flashinfer``), with one exception the rule's
platform conditions already cover (``TRITON_ATTN`` probes ``aiter`` for its ROCm path).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from bot.integration.distributions import Declared, declared_as
from bot.integration.probes import module_path, probes_needed_by
from bot.integration.rules import OptIn
from bot.integration.symbols import NewSymbol


def opt_in_reason(
    item: NewSymbol,
    opt_in: OptIn,
    declared: Declared,
    read: Callable[[str], str | None],
    exists: Callable[[str], bool],
    problems: list[str],
) -> str | None:
    """Why ``item`` is opt-in (a sentence for the note), or None when it is not."""
    if not item.target:
        return None
    path = module_path(item.target, exists)
    if path is None:
        return None
    for probe in probes_needed_by(path, read(path) or "", read, exists, problems):
        package = probe.package
        if package in sys.stdlib_module_names or package in opt_in.first_party:
            continue
        name = declared_as(package, opt_in.distributions_for(package), declared)
        if name and declared.by_default(name):
            continue  # installed by default: the backend can be chosen automatically
        how = f"only as an optional extra (`{name}`)" if name else "nowhere"
        return (
            f"opt-in: needs `{package}` (probed for at `{probe.where}`), which the "
            f"requirement files declare {how}"
        )
    return None
