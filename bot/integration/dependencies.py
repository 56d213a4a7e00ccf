"""The imports rule: every third-party module a PR newly imports, declared somewhere.

Declared means a requirement file (read by :mod:`bot.requirements.parser`), or an install
command of a Dockerfile or CI script (:mod:`~bot.integration.installs`). A module no file at
base imports is new; a guarded import, one the code probes for (:mod:`~bot.integration.
probes`) or one in a file that cannot load without an undeclared library the base already
uses is optional: a note, not a gap.
"""

from __future__ import annotations

import sys

from packaging.utils import canonicalize_name

from bot.core.globs import path_matches
from bot.core.limits import InputRejected
from bot.core.sections import Cache
from bot.core.snapshot import Snapshot
from bot.integration.config import Expectation, IntegrationRule
from bot.integration.distributions import Declared, declared_as, declared_distributions
from bot.integration.headfiles import HeadFiles, Outcome, looked_in, new_finding, read_or_note
from bot.integration.imports import (
    ImportSite,
    imported_anywhere,
    imports_in,
    top_level_imports,
)
from bot.integration.installs import installs_in_files
from bot.integration.probes import probed_in_tree

_BASE_IMPORTS = "integration-base-imports"
_HEAD_PROBES = "integration-head-probes"
_NO_PROBE = "-"  # cached: no file at that head probes for the module


def check_imports(
    snapshot: Snapshot,
    rule: IntegrationRule,
    files: HeadFiles,
    cache: Cache | None,
    outcome: Outcome,
) -> list[dict]:
    sites = _candidate_imports(snapshot, rule, files, outcome.problems)
    if not sites:
        return []
    declared = [_declared(expectation, files, outcome) for expectation in rule.expect]
    # (module, expectation index) pairs no declaration covers; only those need the base
    # walk, which most PRs (importing what the project already declares) never reach.
    gaps = []
    for module in sites:
        for index in range(len(rule.expect)):
            name = declared_as(module, rule.distributions_for(module), declared[index])
            if name is None:
                gaps.append((module, index))
            elif name in declared[index].installed:
                outcome.installed_by.append((module, name, declared[index].installed[name]))
    known = _imported_at_base(snapshot, {m for m, _ in gaps}, cache, outcome.problems)
    outcome.checked_imports += len(sites)
    bare = {m for m, _ in gaps if m not in known and not sites[m].guard}
    optional = _optional_by_the_code(snapshot, rule, files, sites, bare, declared, cache, outcome)
    findings = []
    for module, index in gaps:
        if module in known:
            continue  # not new: some file at base already imports it
        site, expectation = sites[module], rule.expect[index]
        mapped = rule.distributions_for(module)
        finding = new_finding(rule, expectation.where, module, site.path, site.line)
        finding["distribution"] = canonicalize_name(mapped[0] if mapped else module)
        because = f"guarded by {site.guard}" if site.guard else optional.get(module)
        if because:
            finding["optional"] = True
            finding["guard"] = site.guard or because
            finding["where"] = f"{expectation.where} (optional: {because})"
        else:
            finding["missing_in"] = looked_in(files.matching(expectation.paths), expectation)
        findings.append(finding)
    return findings


def _optional_by_the_code(
    snapshot: Snapshot,
    rule: IntegrationRule,
    files: HeadFiles,
    sites: dict[str, ImportSite],
    modules: set[str],
    declared: list[Declared],
    cache: Cache | None,
    outcome: Outcome,
) -> dict[str, str]:
    """Why each of ``modules`` (bare imports no file declares) is optional all the same:
    the repository probes for it (``find_spec("hpc")``), the importing file guards another
    import of it, or the importing file needs an undeclared library the base already
    imports (``aiter``), so it comes with that library's platform stack. Module -> the
    reason, for the ones that are."""
    if not modules:
        return {}
    reasons = {
        module: f"the code probes for it at `{where}`"
        for module, where in _probed_at_head(snapshot, rule, files, modules, cache, outcome)
    }
    own = set(rule.first_party) | set(rule.ignore)
    neighbours: dict[str, list[str]] = {}
    # Each importing file parsed once, not once per module it imports: a file adding
    # thousands of imports would otherwise be parsed thousands of times.
    parsed: dict[str, tuple[list[str], list[ImportSite]] | None] = {}
    for module in modules - set(reasons):
        path = sites[module].path
        if path not in parsed:
            try:
                text = files.text(path)
                parsed[path] = (top_level_imports(path, text), imports_in(path, text))
            except InputRejected:
                parsed[path] = None  # already a problem of _candidate_imports
        if parsed[path] is None:
            continue
        found, file_sites = parsed[path]
        guarded = next((s for s in file_sites if s.module == module and s.guard), None)
        if guarded and not guarded.typing_only:
            # The file's own import of it copes with its absence (vLLM 0.33's m2n_common.py:
            # `import_m2n()` re-raises with install hints; `prepare_m2n_local_runtime`
            # then imports `nccl.core` bare): its author treats it as optional.
            reasons[module] = f"the same file guards it at line {guarded.line} ({guarded.guard})"
            continue
        neighbours[module] = [
            name
            for name in dict.fromkeys(found)
            if name not in modules
            and name not in own
            and name not in sys.stdlib_module_names
            and not _is_own_module(files, name)
            and not any(declared_as(name, rule.distributions_for(name), d) for d in declared)
        ]
    wanted = {n for names in neighbours.values() for n in names}
    at_base = _imported_at_base(snapshot, wanted, cache, outcome.problems) if wanted else set()
    for module, names in neighbours.items():
        established = next((n for n in names if n in at_base), None)
        if established:
            reasons[module] = (
                f"its file needs `{established}` to load, which the project already uses "
                "without declaring it: it comes with that library's stack"
            )
    return reasons


def _probed_at_head(
    snapshot: Snapshot,
    rule: IntegrationRule,
    files: HeadFiles,
    modules: set[str],
    cache: Cache | None,
    outcome: Outcome,
) -> list[tuple[str, str]]:
    """(module, "path:line" of a probe) for the modules some file of the rule's paths at
    head probes for; cached per head commit and module, as the base walk is."""
    found, unknown = [], set()
    for module in sorted(modules):
        hit = cache.get(_HEAD_PROBES, f"{snapshot.head_sha}:{module}") if cache else None
        if hit is None:
            unknown.add(module)
        elif hit != _NO_PROBE:
            found.append((module, hit))
    if unknown:
        python = [p for p in files.all_paths() if p.endswith(".py")]
        python = [p for p in python if any(path_matches(p, g) for g in rule.paths)]
        before = len(outcome.problems)
        # Read through the tree, not HeadFiles: a whole tree is not kept in memory.
        read = read_or_note(files.tree, outcome.problems)
        probes = probed_in_tree(python, read, unknown, outcome.problems)
        found += [(module, probe.where) for module, probe in probes.items()]
        if cache and len(outcome.problems) == before:  # an incomplete scan is not remembered
            for module in unknown:
                where = probes[module].where if module in probes else _NO_PROBE
                cache.put(_HEAD_PROBES, f"{snapshot.head_sha}:{module}", where)
    return found


def _declared(expectation: Expectation, files: HeadFiles, outcome: Outcome) -> Declared:
    paths = files.matching(expectation.paths)
    declared = declared_distributions((path, files.text(path)) for path in paths)
    outcome.problems.extend(declared.problems)
    if expectation.installed_by:
        scripts = files.matching(expectation.installed_by)
        for install in installs_in_files(((p, files.text(p)) for p in scripts), outcome.problems):
            if install.name not in declared.names:
                declared.names[install.name] = install.path
                declared.installed[install.name] = install.where
    return declared


def _candidate_imports(
    snapshot: Snapshot, rule: IntegrationRule, files: HeadFiles, problems: list[str]
) -> dict[str, ImportSite]:
    """Third-party modules that import statements on the PR's added lines name, one site
    each: an unguarded site if there is one (the dependency is then required), else the
    first guarded one. The whole file is parsed, since a guard may sit lines away."""
    own = set(rule.first_party) | set(rule.ignore)
    sites: dict[str, ImportSite] = {}
    for changed in snapshot.files:
        if changed.status == "removed" or not changed.path.endswith(".py"):
            continue
        if not any(path_matches(changed.path, p) for p in rule.paths):
            continue
        try:
            added = {number for number, text in changed.added_lines() if "import" in text}
        except InputRejected as exc:  # a diff over the reader's bound
            problems.append(str(exc))
            continue
        if not added:
            continue
        try:
            found = imports_in(changed.path, files.text(changed.path))
        except InputRejected as exc:
            problems.append(str(exc))
            continue
        for site in found:
            if site.line not in added:
                continue
            if site.module in sys.stdlib_module_names or site.module in own:
                continue
            if site.typing_only:
                continue  # for type checkers; nothing to install
            kept = sites.get(site.module)
            if kept is None or (kept.guard and not site.guard):
                sites[site.module] = site
    # A top-level module or package of the repository itself is first party.
    return {m: s for m, s in sites.items() if not _is_own_module(files, m)}


def _is_own_module(files: HeadFiles, module: str) -> bool:
    if files.own_modules is None:
        files.own_modules = {
            path.split("/", 1)[0].removesuffix(".py")
            for path in files.all_paths()
            if path.endswith(".py") and path.count("/") <= 1
        }
    return module in files.own_modules


def _imported_at_base(
    snapshot: Snapshot, modules: set[str], cache: Cache | None, problems: list[str]
) -> set[str]:
    """Which modules some Python file at base imports, cached per base commit and module."""
    known, unknown = set(), set()
    for module in modules:
        hit = cache.get(_BASE_IMPORTS, f"{snapshot.base_sha}:{module}") if cache else None
        if hit is None:
            unknown.add(module)
        elif hit == "1":
            known.add(module)
    if unknown:
        python_files = [p for p in snapshot.base.list_paths() if p.endswith(".py")]
        before = len(problems)
        found = imported_anywhere(snapshot.base, python_files, unknown, problems)
        known |= found
        if cache and len(problems) == before:  # an incomplete scan is not remembered
            for module in unknown:
                answer = "1" if module in found else "0"
                cache.put(_BASE_IMPORTS, f"{snapshot.base_sha}:{module}", answer)
    return known
