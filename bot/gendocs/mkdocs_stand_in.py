"""Runs an mkdocs-gen-files script without mkdocs, and records what it generates.

Not imported by prbot: this file is copied into the sandbox and run there by a bare
interpreter (``python -I -S``), so it uses the standard library only. It stands in for
the ``mkdocs_gen_files`` module (files opened for writing are kept in memory), maps
``regex`` to ``re`` when the real one is absent, and, when the script fills markers through
a ``generated_content.fill_markers`` helper next to it (vLLM's layout), keeps the blocks
it fills. A marker the helper refuses (missing, or left behind) is the doc's fault, not the
generator's, so it is recorded apart from other failures.

    python -I -S mkdocs_stand_in.py SCRIPT RESULT.json
"""

import io
import json
import re
import runpy
import sys
import traceback
import types
from pathlib import Path

# Kept small: a generator writing more than this is not writing one docs page.
MAX_WRITTEN_CHARS = 8_000_000


def _stand_in_module(written: dict) -> types.ModuleType:
    module = types.ModuleType("mkdocs_gen_files")

    class _Page(io.StringIO):
        def __init__(self, name: str) -> None:
            super().__init__()
            self._page_name = name

        def close(self) -> None:
            if not self.closed:
                text = self.getvalue()
                if sum(len(v) for v in written.values()) + len(text) > MAX_WRITTEN_CHARS:
                    raise OSError("the generator wrote more than the stand-in keeps")
                written[self._page_name] = text
            super().close()

    def open_page(name, mode="r", *args, **kwargs):
        if not any(flag in mode for flag in "wa"):
            raise OSError(f"the stand-in mkdocs_gen_files cannot read {name!r}")
        return _Page(str(name))

    module.open = open_page
    module.set_edit_path = lambda *args, **kwargs: None
    return module


def main() -> int:
    script, result_path = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    written: dict = {}
    blocks: dict = {}
    result = {"blocks": blocks, "files": [], "error": None, "marker_error": None}
    sys.modules["mkdocs_gen_files"] = _stand_in_module(written)
    try:
        import regex  # noqa: F401
    except ImportError:
        sys.modules["regex"] = re
    sys.path.insert(0, str(script.parent))
    sys.argv = [str(script)]
    try:
        import generated_content
    except ImportError:
        generated_content = None
    original = getattr(generated_content, "fill_markers", None)
    if callable(original):

        def fill_markers(doc_path, content):
            blocks[str(doc_path)] = {str(k): str(v) for k, v in dict(content).items()}
            try:
                return original(doc_path, content)
            except ValueError as exc:
                result["marker_error"] = str(exc)
                raise

        generated_content.fill_markers = fill_markers
    try:
        runpy.run_path(str(script))
    except BaseException as exc:  # noqa: BLE001 - whatever the script raised is the finding
        if result["marker_error"] is None:
            result["error"] = _describe(exc)
    result["files"] = sorted(written)  # names only: the blocks are what prbot compares
    with open(result_path, "w", encoding="utf-8") as out:
        json.dump(result, out)
    return 0


def _describe(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


if __name__ == "__main__":
    sys.exit(main())
