"""Every check on real vLLM releases and consecutive release pairs (run by hand, never in CI).

    PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_trees.py \\
        [VERSION ...] [--only gendocs,integration,requirements,review] [--out FILE]

Releases are downloaded on demand (``benchmarks/vllm_releases.py``; nothing is committed).
Each part is its own script, runnable alone, exposing ``run(versions) -> dict`` and
``render(result) -> str``:

- ``real_gendocs``: per release, prbot's generated-docs verdict beside vLLM's own generator;
- ``real_integration``: per pair, integration findings marked confirmed or false by the later
  release's own wiring;
- ``real_requirements``: per pair, requirement findings counted by kind;
- ``real_review``: per pair, review flags per pattern.

Each part times its own check. The combined figures go to docs/benchmarks/real_trees.md.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_releases  # noqa: E402

PARTS = ["gendocs", "integration", "requirements", "review"]
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "real_trees.md"
# At least five releases across the generated doc's life, the newest on PyPI included.
VERSIONS = ["0.18.0", "0.20.2", "0.21.0", "0.23.0", "0.26.0", "0.30.0", "0.33.0"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help=f"default: {' '.join(VERSIONS)}")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    versions = sorted(args.versions or VERSIONS, key=vllm_releases.version_key)
    chosen = [part.strip() for part in args.only.split(",") if part.strip()]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        print(f"real_trees: unknown part {', '.join(unknown)} (parts: {', '.join(PARTS)})")
        return 2
    sections = [
        "# Real vLLM releases: every check",
        "",
        "Rerun: `PRBOT_BENCH_CACHE=~/.cache/prbot-bench uv run python benchmarks/real_trees.py "
        + " ".join(versions)
        + "`",
        "",
        f"Releases: {', '.join(versions)} (PyPI sdists). Each part below is also a script of "
        "its own (`benchmarks/real_<part>.py`).",
        "",
    ]
    for part in chosen:
        module = importlib.import_module(f"real_{part}")
        started = time.perf_counter()
        result = module.run(versions)
        elapsed = time.perf_counter() - started
        sections.append(module.render(result).strip())
        sections.append("")
        sections.append(f"*({part}: {elapsed:.0f} s for the whole part on this machine)*")
        sections.append("")
        print(f"real_trees: {part} done in {elapsed:.0f} s", file=sys.stderr)
    args.out.write_text("\n".join(sections))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
