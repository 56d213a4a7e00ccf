"""A doc's own generator (the repository's), run in the sandbox: the authority on the doc.

The generator comes from the PR's *base* revision and runs against a copy of the *head*
tree, so a PR cannot choose the code that judges it; a trusted author's changed generator
runs instead. It runs under a bare interpreter (``python -I -S``: no site-packages, no
``PYTHON*`` variables) through :class:`bot.local.sandbox.SandboxRunner` (scrubbed environment,
timeout, CPU and memory limits). vLLM's generators read the source with ``ast`` and import
nothing but the standard library, so that is enough; one that needs more fails, and the
doc is reported as not verified, with the reason.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from bot.core.limits import MAX_DOC_BYTES, InputRejected, check_size
from bot.core.sections import Cache, CommandRunner
from bot.core.snapshot import TreeReader
from bot.gendocs.config import DocGenerator, DocRule
from bot.local.git import GitError

STAND_IN = Path(__file__).with_name("mkdocs_stand_in.py")
# Inside the sandbox copy, so an unprivileged sandbox user can write there.
OUTPUT_DIR = ".prbot-generated"
STAND_IN_DIR = ".prbot-stand-in"
STYLE_FOR_MODE = {"committed": "output", "markers": "mkdocs_gen_files"}
# Why a trusted author's changed generator did not run: the report's one line.
NOT_ISOLATED = (
    "the sandbox here cannot keep a changed generator from prbot's key, database and memory "
    "(no user namespaces and no PRBOT_SANDBOX_USER), so only the base revision's runs"
)
_counter = itertools.count()


@dataclass
class GeneratorRun:
    """What one run of a doc generator produced (or why it did not run)."""

    script: str
    style: str
    ran_from: str  # "base", "head" (the PR's), or "tree" (a working tree)
    text: str | None = None  # style "output": the whole doc
    blocks: dict[str, str] | None = None  # style "mkdocs_gen_files": marker key -> content
    marker_error: str | None = None  # the doc's markers do not fit the generated blocks
    error: str | None = None  # the generator could not run, or failed
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def describe(self) -> dict[str, Any]:
        """The *extra* ``generator`` field of a finding."""
        return {
            "script": self.script,
            "style": self.style,
            "ran_from": self.ran_from,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }

    def to_cache(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_cache(cls, text: str) -> GeneratorRun:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class NotRun:
    """No generator ran; the extractor is the judge, and ``reason`` says why."""

    reason: str


def choose(rule: DocRule, mode: str, tree: TreeReader) -> DocGenerator | None:
    """The first configured generator present in ``tree`` that produces a doc of ``mode``."""
    style = STYLE_FOR_MODE.get(mode)
    for generator in rule.generators:
        if generator.style == style and tree.read_bytes(generator.script) is not None:
            return generator
    return None


def run_doc_generator(
    rule: DocRule,
    mode: str,
    head: TreeReader,
    *,
    runner: CommandRunner | None,
    work_dir: Path | None,
    base: TreeReader | None = None,
    trusted: bool = True,
    generator_changed: bool = False,
    cache: Cache | None = None,
) -> GeneratorRun | NotRun | None:
    """Run the doc's generator against ``head``; None when the rules name none for it.

    With ``base`` (a PR) the base revision's generator runs, unless the PR changes it and
    its author is trusted. Without ``base`` (a working tree) the tree's own runs.
    """
    if not rule.generators:
        return None
    isolated = runner is not None and runner.isolated
    if base is None:
        source, ran_from = head, "tree"
    elif generator_changed and trusted and isolated:
        source, ran_from = head, "head"
    else:
        source, ran_from = base, "base"
    generator = choose(rule, mode, source)
    if generator is None and ran_from == "base" and trusted and isolated:
        generator, source, ran_from = choose(rule, mode, head), head, "head"
    if generator is None:
        where = {"base": "the base revision", "head": "the PR", "tree": "the tree"}[ran_from]
        if choose(rule, mode, head) is not None:
            why = "an author who is not trusted" if not trusted else "anyone here"
            return NotRun(
                f"the PR adds a generator for this doc; it is not run for {why}, and {where} "
                "has none" + ("" if not trusted or isolated else f" ({NOT_ISOLATED})")
            )
        return NotRun(f"{where} has no generator for a doc of this kind ({mode} tables)")
    if runner is None or work_dir is None:
        return NotRun("the repository's generator was not run: no sandbox runner here")
    key = _cache_key(rule, generator, source, head)
    if cache is not None and key is not None:
        cached = cache.get("gendocs-generator", key)
        if cached is not None:
            return GeneratorRun.from_cache(cached)
    run = _run(rule, generator, head, source if ran_from == "base" else None, runner, work_dir)
    run.ran_from = ran_from
    if cache is not None and key is not None and run.ok:
        cache.put("gendocs-generator", key, run.to_cache())
    return run


def _cache_key(
    rule: DocRule, generator: DocGenerator, source: TreeReader, head: TreeReader
) -> str | None:
    # Only git revisions never change; a working tree is run every time.
    if source.cache_identity is None or head.cache_identity is None:
        return None
    ids = f"{source.cache_identity}:{head.cache_identity}"
    return f"{ids}:{rule.path}:{generator.model_dump_json()}:v1"


def _run(
    rule: DocRule,
    generator: DocGenerator,
    head: TreeReader,
    base: TreeReader | None,
    runner: CommandRunner | None,
    work_dir: Path,
) -> GeneratorRun:
    run = GeneratorRun(generator.script, generator.style, "head")
    tree = work_dir / f"docgen-{next(_counter)}"
    own_files = sorted({generator.script, *rule.generator})
    wanted = [*generator.inputs, rule.path, *own_files] if generator.inputs else None
    try:
        head.export(tree, wanted)
        if base is not None:  # the generator's own files come from the base revision
            for path in own_files:
                _remove(tree, path)
            base.export(tree, [p for p in own_files if base.read_bytes(p) is not None])
    except (OSError, tarfile.TarError, GitError) as exc:
        run.error = f"could not copy the tree for the generator: {exc}"
        return run
    # Made fresh: a PR's tree could ship these paths, e.g. as links to write through.
    for own in (OUTPUT_DIR, STAND_IN_DIR):
        _remove(tree, own)
    out_dir = tree / OUTPUT_DIR
    out_dir.mkdir()
    interpreter = [sys.executable, "-I", "-S"]
    if generator.style == "output":
        output = out_dir / PurePosixPath(rule.path).name
        args = [a.replace("{output}", str(output)) for a in generator.args]
        argv = [*interpreter, generator.script, *args]
    else:
        output = out_dir / "result.json"
        stand_in = tree / STAND_IN_DIR / STAND_IN.name
        stand_in.parent.mkdir()
        shutil.copyfile(STAND_IN, stand_in)
        argv = [*interpreter, str(stand_in), generator.script, str(output)]
    try:
        done = runner.run(argv, cwd=tree, timeout=generator.timeout, network=False)
    except OSError as exc:
        run.error = f"could not start the generator: {exc.strerror or type(exc).__name__}"
        return run
    run.seconds = done.seconds
    if done.timed_out:
        run.error = f"{generator.script} timed out after {generator.timeout:g}s"
        return run
    if done.returncode != 0 and generator.style == "output":
        tail = (done.stderr or done.stdout).strip().splitlines()[-2:]
        run.error = f"{generator.script} exited with {done.returncode}" + (
            f": {' / '.join(line.strip() for line in tail)}" if tail else ""
        )
        return run
    try:
        produced = _read_output(tree, output)
    except InputRejected as exc:
        run.error = f"{generator.script} ran, but its output was not read: {exc.reason}"
        return run
    if produced is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-2:]
        run.error = f"{generator.script} ran but wrote no output" + (
            f" ({' / '.join(line.strip() for line in tail)})" if tail else ""
        )
        return run
    if generator.style == "output":
        run.text = produced
        return run
    _read_stand_in_result(run, rule, produced)
    return run


def _read_output(tree: Path, output: Path) -> str | None:
    if output.is_symlink() or tree.resolve() not in output.resolve().parents:
        # Following it would read (and post) a file from outside the sandbox copy.
        raise InputRejected(output.name, "is a symbolic link")
    if not output.is_file():
        return None
    data = output.read_bytes()
    check_size(output.name, data, MAX_DOC_BYTES * 2, "generated output")
    return data.decode("utf-8", "replace")


def _read_stand_in_result(run: GeneratorRun, rule: DocRule, produced: str) -> None:
    try:
        result = json.loads(produced)
        blocks = result.get("blocks") or {}
        error, marker_error = result.get("error"), result.get("marker_error")
    except (ValueError, AttributeError):
        run.error = f"{run.script}: the stand-in's result is not readable"
        return
    if error:
        run.error = f"{run.script} failed: {error}"
        return
    # vLLM names pages relative to docs/ ("design/attention_backends.md").
    page = next((k for k in blocks if rule.path.endswith(str(k))), None)
    if page is None and len(blocks) == 1:
        page = next(iter(blocks))
    if page is None:
        if marker_error:
            run.marker_error = str(marker_error)
            run.blocks = {}
            return
        run.error = f"{run.script} ran but filled no markers of {rule.path}"
        return
    run.blocks = {str(k): str(v) for k, v in dict(blocks[page]).items()}
    run.marker_error = str(marker_error) if marker_error else None


def _remove(root: Path, rel: str) -> None:
    target = root / rel
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
