"""Opt-in registry members: backends a project leaves out of automatic selection on purpose.

vLLM's CUDA priority lists choose a backend when the user names none, so every backend
there must work on a default install. ``HPC_ATTN`` needs Tencent's ``hpc`` package and
``B12X`` the ``b12x`` package (``pip install vllm[b12x]``); neither is installed by
default, and the code says so by probing for them (``find_spec``) before use. Such a
backend is only ever selected by explicit configuration, so "not yet in the CUDA priority
lists" is not a gap. The signal read here, all in the head tree, is one of:

- the member's own module probes for a third-party package that no requirement file
  declares (``hpc_attn.py``: ``if importlib.util.find_spec("hpc") is None: raise``);
- the module, or a name it imports from another repository file, probes for a package the
  requirement files declare only as an optional extra (``b12x``, via ``vllm/utils/b12x.py``).

A helper's probe for an undeclared package is not enough: helpers probe for alternatives
and fast paths (``vllm/_aiter_ops.py`` for ``aiter``, ``vllm/utils/flashinfer.py`` for the
prebuilt ``flashinfer_cubin``) that backends in the CUDA lists use when present. Over every
vLLM release 0.17-0.33 the signal marks exactly ``HPC_ATTN`` and ``B12X``, and no backend of
the CUDA priority lists.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from bot.integration.config import OptIn
from bot.integration.distributions import Declared, declared_as, declared_by_default
from bot.integration.probes import module_path, probes_needed_by
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
        mapped = opt_in.distributions_for(package)
        if declared_by_default(package, mapped, declared):
            continue  # installed by default: the backend can be chosen automatically
        name = declared_as(package, mapped, declared)
        if name:  # an extra: the project's own opt-in install (`pip install vllm[b12x]`)
            how = f"only as an optional extra (`{name}`)"
        elif probe.path == path:  # the backend's own module asks for it before use
            how = "nowhere"
        else:
            continue  # a helper's probe, often an alternative or a fast path (aiter, cubins)
        return (
            f"opt-in: needs `{package}` (probed for at `{probe.where}`), which the "
            f"requirement files declare {how}"
        )
    return None
