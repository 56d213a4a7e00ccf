"""The integration checklist on consecutive real vLLM releases, judged by later releases.

    PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_integration.py \\
        [VERSION ...] [--out docs/benchmarks/real_integration.md]

Each consecutive pair of releases (``vllm_releases.pair``: a git repository whose ``base``
and ``head`` branches are the two sdist trees) is checked as one PR with the built-in vLLM
rules, integration check only. Every finding is then judged by the releases that came
after the pair's head, on their own wiring:

- a wiring finding ("X not yet in the CUDA priority lists") is **confirmed** when a later
  release puts X there (the gap was real and the project closed it), and **false** when X
  is already there at head by a plain search of non-comment lines (the check missed it) or
  when no later release ever puts it there (the project handles it another way);
- an undeclared-import finding is **false** when a requirement file at head already
  declares a distribution with the module's name as a dash-separated part of its own
  (``apache-tvm-ffi`` for ``tvm_ffi``), **confirmed** when a later release declares the
  distribution (or installs it by name in a Dockerfile or CI script), **false** otherwise;
- a finding of the newest pair has no later release to judge it: **open**;
- optional imports (guarded, probed for, or coming with an undeclared platform library)
  and opt-in backends are **notes**, not missing items.

Time per check is the check alone, cold (empty cache) and warm (the same cache: the base
walk for imports is remembered per base commit), beside a baseline measured in the same
run: reading the head text of every changed file once, the least any check of the diff
pays. Nothing from the trees is written here; figures go to the ``--out`` page.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_releases  # noqa: E402

from bot.checks import get_check  # noqa: E402
from bot.checks.base import CheckContext, MemoryCache  # noqa: E402
from bot.core.snapshot import DirTree, Snapshot, snapshot_from_checkout  # noqa: E402
from bot.integration.checklist import HeadFiles, is_wired  # noqa: E402
from bot.integration.config import Expectation, IntegrationRule  # noqa: E402
from bot.integration.distributions import declared_as, declared_distributions  # noqa: E402
from bot.integration.installs import installs_in_files  # noqa: E402
from bot.integration.symbols import NewSymbol, assigned_names, new_symbols  # noqa: E402
from bot.report import rules as rule_sets  # noqa: E402

# Spans 0.17 (the first with the generated attention-backend doc) to the newest on PyPI.
DEFAULT_VERSIONS = [
    "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.20.2", "0.21.0", "0.22.0", "0.23.0",
    "0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0",
    "0.32.0", "0.33.0",
]  # fmt: skip
ENUM_REGISTRY = "vllm/v1/attention/backends/registry.py"


def _rules() -> Any:
    return rule_sets.load_builtin("vllm").checks.integration


def _timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def _baseline(snapshot: Snapshot) -> None:
    for changed in snapshot.files:
        if changed.status != "removed":
            snapshot.head.read_text(changed.path)


def _without_comments(text: str) -> str:
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def _plainly_present(tree: DirTree, files: HeadFiles, finding: dict, exp: Expectation) -> bool:
    """The reference a reviewer would use: the pattern on non-comment lines of the files
    (anchors loosened to a list item or a word, so ``- fa2`` matches ``^fa2$``)."""
    pattern = exp.pattern.replace("^", r"(?:^|[\s\-\[,'\"])").replace("$", r"(?:$|[\s,\]'\"])")
    regex = re.compile(pattern.replace("{symbol}", re.escape(finding["symbol"])), re.M)
    return any(
        regex.search(_without_comments(tree.read_text(path) or ""))
        for path in files.matching(exp.paths)
    )


class _Judge:
    """Later releases' trees, each read once, for the verdicts."""

    def __init__(self, head: str, later: list[str]) -> None:
        self.head = head
        self.later = later
        self._trees: dict[str, tuple[DirTree, HeadFiles]] = {}

    def files(self, version: str) -> tuple[DirTree, HeadFiles]:
        if version not in self._trees:
            tree = DirTree(vllm_releases.tree(version))
            self._trees[version] = (tree, HeadFiles(tree, []))
        return self._trees[version]

    def symbol(self, finding: dict, rule: IntegrationRule, head: str) -> tuple[str, str]:
        if finding.get("opt_in"):
            return "note", finding["opt_in"]
        expectation = next(e for e in rule.expect if e.where == finding["where"])
        head_tree, head_files = self.files(head)
        if _plainly_present(head_tree, head_files, finding, expectation):
            return "false", f"already in {', '.join(expectation.paths)} at {head}"
        names = assigned_names(finding["path"], head_tree.read_text(finding["path"]) or "")
        item = NewSymbol(finding["symbol"], finding["path"], 0, names.get(finding["symbol"]))
        if is_wired(item, expectation, head_files):
            return "false", f"wired at {head} (through an alias)"
        for version in self.later:
            tree, files = self.files(version)
            names = assigned_names(finding["path"], tree.read_text(finding["path"]) or "")
            if finding["symbol"] not in names:
                return "false", f"gone from the registry in {version}, never wired"
            item = NewSymbol(finding["symbol"], finding["path"], 0, names[finding["symbol"]])
            if is_wired(item, expectation, files):
                return "confirmed", f"wired in {version}"
        if not self.later:
            return "open", "no later release"
        return "false", f"no release up to {self.later[-1]} wires it: handled another way"

    def dependency(self, finding: dict, rule: IntegrationRule) -> tuple[str, str]:
        if finding.get("optional"):
            because = finding["where"].split("(optional: ", 1)[-1].removesuffix(")")
            return "note", f"optional: {because}"
        expectation = next(e for e in rule.expect if finding["where"] == e.where)
        mapped = rule.distributions_for(finding["symbol"])
        # A reviewer's reference at head: a declared distribution with the module's name as
        # a dash-separated part of its own (apache-tvm-ffi for tvm_ffi).
        _, head_files = self.files(self.head)
        paths = head_files.matching(expectation.paths)
        at_head = declared_distributions((p, head_files.text(p)) for p in paths)
        part = canonicalize_name(finding["symbol"])
        named = [n for n in at_head.names if f"-{part}-" in f"-{n}-"]
        if named:
            return "false", f"declared at {self.head} as `{named[0]}`"
        for version in self.later:
            _, files = self.files(version)
            paths = files.matching(expectation.paths)
            declared = declared_distributions((p, files.text(p)) for p in paths)
            if declared_as(finding["symbol"], mapped, declared):
                return "confirmed", f"declared in {version}"
            scripts = files.matching(expectation.installed_by)
            installed = declared_distributions([])
            for install in installs_in_files(((p, files.text(p)) for p in scripts), []):
                installed.names[install.name] = install.where
            if declared_as(finding["symbol"], mapped, installed):
                return "confirmed", f"installed by name in {version}"
        if not self.later:
            return "open", "no later release"
        return "false", f"never declared up to {self.later[-1]}"


def _new_enum_members(base: str, head: str) -> list[str]:
    before = assigned_names(
        ENUM_REGISTRY, DirTree(vllm_releases.tree(base)).read_text(ENUM_REGISTRY) or ""
    )
    after = assigned_names(
        ENUM_REGISTRY, DirTree(vllm_releases.tree(head)).read_text(ENUM_REGISTRY) or ""
    )
    return [name for name in after if name not in before and re.fullmatch(r"[A-Z][A-Z0-9_]*", name)]


def _ticked(snapshot: Snapshot, rules: Any, section: Any) -> list[list[str]]:
    """(symbol, where) of every expectation a new name met: applied, not skipped, no finding."""
    reported = {(f["symbol"], f["where"]) for f in section.findings}
    skipped = {(s, w) for s, w, _ in section.data.get("wired_elsewhere", [])}
    ticked = []
    for rule in rules.rules:
        if rule.kind != "symbol":
            continue
        for item in new_symbols(snapshot, rule):
            for exp in rule.expect:
                key = (item.symbol, exp.where)
                if exp.applies_to(item.symbol) and key not in reported | skipped:
                    ticked.append(list(key))
    return ticked


def check_pair(base: str, head: str, later: list[str]) -> dict[str, Any]:
    repo = vllm_releases.pair(base, head)
    rules = _rules()
    by_name = {rule.name: rule for rule in rules.rules}
    snapshot = snapshot_from_checkout(
        repo, "base", "head", repo_name="vllm-project/vllm", trusted=True
    )
    try:
        _, baseline = _timed(lambda: _baseline(snapshot))
        check = get_check("integration")
        with tempfile.TemporaryDirectory() as scratch:
            context = CheckContext(work_dir=Path(scratch), cache=MemoryCache())
            section, cold = _timed(lambda: check.run(snapshot, rules, context))
            _, warm = _timed(lambda: check.run(snapshot, rules, context))
        ticked = _ticked(snapshot, rules, section)
    finally:
        snapshot.close()
    judge = _Judge(head, later)
    findings = []
    for finding in section.findings:
        rule = by_name[finding["rule"]]
        if rule.kind == "imports":
            verdict, why = judge.dependency(finding, rule)
        else:
            verdict, why = judge.symbol(finding, rule, head)
        findings.append(
            {"symbol": finding["symbol"], "where": finding["where"], "verdict": verdict, "why": why}
        )
    return {
        "base": base,
        "head": head,
        "changed_files": len(snapshot.files),
        "status": str(section.status),
        "summary": section.summary,
        "new_backends": _new_enum_members(base, head),
        "ticked": ticked,
        "wired_elsewhere": [list(t) for t in section.data.get("wired_elsewhere", [])],
        "problems": section.data.get("problems", []),
        "findings": findings,
        "seconds": cold,
        "warm_seconds": warm,
        "baseline_seconds": baseline,
    }


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def base_walk(base: str, head: str) -> dict[str, Any]:
    """The worst case for a PR: one new file importing a module no file at base imports,
    on top of a real release, so the whole base tree is walked. Cold, then warm (the walk
    remembered for that base commit), beside reading every base Python file once."""
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "repo"
        _git(
            Path(scratch),
            "clone",
            "-q",
            "--shared",
            "-b",
            "head",
            str(vllm_releases.pair(base, head)),
            str(repo),
        )
        (repo / "vllm" / "prbot_bench_probe.py").write_text("import prbot_bench_new_dep\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "probe: one new third-party import")
        snapshot = snapshot_from_checkout(
            repo, "head~1", "HEAD", repo_name="vllm-project/vllm", trusted=True
        )
        try:
            python_files = [p for p in snapshot.base.list_paths() if p.endswith(".py")]
            _, floor = _timed(lambda: [snapshot.base.read_text(p) for p in python_files])
            rules, check = _rules(), get_check("integration")
            context = CheckContext(work_dir=Path(scratch), cache=MemoryCache())
            section, cold = _timed(lambda: check.run(snapshot, rules, context))
            _, warm = _timed(lambda: check.run(snapshot, rules, context))
        finally:
            snapshot.close()
    return {
        "release": head,
        "python_files": len(python_files),
        "found": [f["symbol"] for f in section.findings],
        "seconds": cold,
        "warm_seconds": warm,
        "read_all_seconds": floor,
    }


def run(versions: list[str]) -> dict[str, Any]:
    """Every consecutive pair of ``versions``: findings with verdicts, and timings."""
    versions = sorted(versions, key=vllm_releases.version_key)
    pairs = []
    for index, (base, head) in enumerate(zip(versions, versions[1:], strict=False)):
        print(f"real_integration: {base} -> {head}", file=sys.stderr, flush=True)
        pairs.append(check_pair(base, head, versions[index + 2 :]))
    verdicts: dict[str, int] = {}
    for pair in pairs:
        for finding in pair["findings"]:
            verdicts[finding["verdict"]] = verdicts.get(finding["verdict"], 0) + 1
    walk = base_walk(versions[-2], versions[-1])
    return {"versions": versions, "pairs": pairs, "verdicts": verdicts, "base_walk": walk}


# Why the items that vLLM handles on purpose come out as notes or declarations (what the
# previous runs reported as false), printed under the totals.
REASONING = """\
## Notes, not gaps: what the head tree says is deliberate

- **Opt-in backends** (`HPC_ATTN` 0.25, `B12X` 0.30). Both need a package vLLM does not
  install by default, and the code says so: `HpcAttentionImpl.__init__` raises unless
  `importlib.util.find_spec("hpc")` finds it; `B12xPagedAttentionBackend.supports_combination`
  asks `vllm/utils/b12x.py`, whose `_HAS_B12X = find_spec("b12x")`, and `b12x` is declared
  only as the `vllm[b12x]` extra. vLLM selects such a backend only when configured (the
  `selected_backend` path of `CudaPlatformBase.get_attn_backend_cls`), never from the priority
  lists. The signal (`opt_in` on the rule, `bot/integration/opt_in.py`): the member's own
  module probes (`find_spec`) for a third-party package no requirement file declares, or it
  (or a name it imports from another repository file) probes for one declared only as an
  optional extra. A helper's probe for an undeclared package does not count: helpers probe
  for fast paths that CUDA-list backends use when present (`aiter` in `vllm/_aiter_ops.py`
  for `TRITON_ATTN`, `flashinfer_cubin` in `vllm/utils/flashinfer.py` for `FLASHINFER`).
  Applied to every registry member of every release 0.17-0.33, it marks exactly `HPC_ATTN`
  and `B12X`, and no backend of the CUDA priority lists. The unmet expectations of an
  opt-in backend are listed as notes with the reason, so nothing is hidden.
- **Libraries installed outside the requirement files.** `kvcr` is installed by name in
  `.buildkite/scripts/install-kv-offload.sh` (`"kvcr @ git+…"`): install commands in
  `docker/**`, `.buildkite/scripts/**` and `tools/**/*.sh` count as declarations
  (`installed_by`, `bot/integration/installs.py`: shlex after joining continuations, only
  named installs, bounded per file and in number of files). `nixl_ep` ships in the `nixl`
  wheels (`docker/Dockerfile` reinstalls `nixl-cu<N>` "so the correct nixl_ep_cpp.so is
  installed"), and `nixl` is declared in `requirements/kv_connectors.txt`: a mapping in the
  rule. `hpc` is probed for by the code (`find_spec("hpc")`): optional, like a guarded
  import. `flydsl` is imported by `fused_flydsl_moe.py`, which cannot load without `aiter`,
  which vLLM already uses undeclared (`docker/Dockerfile.rocm_base` builds aiter from its
  git repository and installs aiter's own requirements file, which prbot cannot read): the
  new library comes with that stack, a note. The signal is the file's dependence on the
  established undeclared library at load time (a top-level import), nothing about names.
- **A bare import beside a guarded one.** vLLM 0.33's `m2n_common.py` imports `nccl.core`
  bare in a function that runs only after `import_m2n()` got `nccl.m2n` through
  `try/except ImportError` (re-raised with install hints: "not installed by vLLM"). A bare
  import in a file that guards another import of the same module is optional; a guard in
  another file is not enough (`humming`, 0.20, stays a finding and was confirmed).
- **Declared under a vendor's prefix.** `tvm_ffi` is `apache-tvm-ffi` in
  `requirements/cuda.txt`: a declared `<something>-<module>` now counts, as `<module>-<something>`
  (`quack-kernels`) already did.
"""


WALK_NOTE = (
    "An import that is bare, undeclared and new at base is the one case that reads a tree "
    "twice: the base, to know it is new, and the head, for a probe (`find_spec`) that makes "
    "it optional. Both walks are cached per commit and module, so the warm figure is "
    "what a PR pays for its next push."
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(result: dict[str, Any]) -> str:
    """The Markdown page: totals, then one row per pair and one per finding."""
    pairs = result["pairs"]
    verdicts = result["verdicts"]
    lines = [
        "# Integration checklist on real vLLM releases",
        "",
        "```sh",
        "PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_integration.py "
        + " ".join(result["versions"])
        + " --out docs/benchmarks/real_integration.md",
        "```",
        "",
        f"{len(pairs)} consecutive pairs, {result['versions'][0]} → {result['versions'][-1]}, "
        "each checked as one PR (built-in `vllm` rules, integration check only). Verdicts by "
        "the later releases' own wiring (rule in `benchmarks/real_integration.py`'s "
        "docstring): confirmed when a later release wires the name where the finding says; "
        "false when it is already there at head (plain search of non-comment lines) or no "
        "later release ever puts it there; open for the newest pair; optional imports "
        "and opt-in backends are notes.",
        "",
        "| Verdict | Findings |",
        "| --- | --- |",
        *(f"| {v} | {verdicts.get(v, 0)} |" for v in ("confirmed", "false", "open", "note")),
        "",
        REASONING,
        "## Per pair",
        "",
        "| Pair | Changed files | New backends | Status | Findings (c/f/o/n) | Check cold | "
        "Warm | Baseline | Cold / baseline |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pair in pairs:
        counts = {v: 0 for v in ("confirmed", "false", "open", "note")}
        for finding in pair["findings"]:
            counts[finding["verdict"]] += 1
        ratio = pair["seconds"] / pair["baseline_seconds"] if pair["baseline_seconds"] else 0
        lines.append(
            f"| {pair['base']} → {pair['head']} | {pair['changed_files']} | "
            f"{', '.join(pair['new_backends']) or '—'} | {pair['status']} | "
            f"{counts['confirmed']}/{counts['false']}/{counts['open']}/{counts['note']} | "
            f"{pair['seconds']:.2f} s | {pair['warm_seconds']:.2f} s | "
            f"{pair['baseline_seconds']:.2f} s | {ratio:.1f}× |"
        )
    lines += [
        "",
        "## Findings",
        "",
        "| Pair | Symbol | Where | Verdict | Why |",
        "| --- | --- | --- | --- | --- |",
    ]
    for pair in pairs:
        for finding in pair["findings"]:
            lines.append(
                f"| {pair['base']} → {pair['head']} | `{finding['symbol']}` | "
                f"{_cell(finding['where'])} | **{finding['verdict']}** | {_cell(finding['why'])} |"
            )
    walk = result["base_walk"]
    lines += [
        "",
        "## Walking the base tree for imports (the worst case for a PR)",
        "",
        f"One new file importing a module no file of {walk['release']} imports, on top of "
        f"that release: the whole base tree ({walk['python_files']} Python files) is walked.",
        "",
        "| | Seconds | vs reading every base Python file once |",
        "| --- | --- | --- |",
        f"| Read every base Python file (baseline) | {walk['read_all_seconds']:.2f} | 1.0× |",
        f"| Check, cold | {walk['seconds']:.2f} | "
        f"{walk['seconds'] / walk['read_all_seconds']:.2f}× |",
        f"| Check, warm (walk cached per base commit) | {walk['warm_seconds']:.2f} | "
        f"{walk['warm_seconds'] / walk['read_all_seconds']:.2f}× |",
        "",
        WALK_NOTE,
    ]
    lines += ["", "## New names and what came out ticked", ""]
    lines += ["| Pair | Ticked (name: expectation) |", "| --- | --- |"]
    for pair in pairs:
        if pair["ticked"]:
            cells = "; ".join(f"`{symbol}`: {where}" for symbol, where in pair["ticked"])
            lines.append(f"| {pair['base']} → {pair['head']} | {cells} |")
    lines += ["", "## Wired another way (expectation skipped by `unless_used_in`)", ""]
    lines += ["| Pair | Backend | Expectation | Used in |", "| --- | --- | --- | --- |"]
    for pair in pairs:
        for symbol, where, path in pair["wired_elsewhere"]:
            lines.append(f"| {pair['base']} → {pair['head']} | `{symbol}` | {where} | `{path}` |")
    problems = [(p, problem) for p in pairs for problem in p["problems"]]
    if problems:
        lines += ["", "## Files not read", ""]
        lines += [f"- {p['base']} → {p['head']}: {_cell(problem)}" for p, problem in problems]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=DEFAULT_VERSIONS)
    parser.add_argument("--out", type=Path, help="write the Markdown page here")
    args = parser.parse_args(argv)
    if len(args.versions) < 2:
        parser.error("need at least two versions")
    try:
        result = run(args.versions)
    except (vllm_releases.ReleaseError, OSError) as exc:
        print(f"real_integration: {exc}", file=sys.stderr)
        return 2
    page = render(result)
    if args.out:
        args.out.write_text(page)
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
