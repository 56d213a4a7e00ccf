"""The parts of docs/ that the code already knows, generated from it: every command's
``--help`` (docs/cli.md) and the rule keys with their types and defaults (docs/rules.md).

``uv run python -m bot.cli.reference --write`` rewrites them between their markers;
tests/test_docs_reference.py fails when the docs and the code disagree.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
# The width help text is wrapped at, so the page does not depend on the terminal.
HELP_COLUMNS = "100"


def _marker(name: str) -> tuple[str, str]:
    return (
        f"<!-- generated: {name} (uv run python -m bot.cli.reference --write) -->",
        f"<!-- end generated: {name} -->",
    )


def _help_of(argv: list[str]) -> str:
    from bot.cli import build_parser

    out = io.StringIO()
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        with redirect_stdout(out):
            try:
                build_parser(argv).parse_args([*argv, "--help"])
            except SystemExit:
                pass
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return out.getvalue().rstrip() + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return sorted(action.choices)
    return []


def cli_reference() -> str:
    """``prbot --help`` and each command's (and each sub-action's) ``--help``."""
    from bot.cli import build_parser

    root = build_parser()
    parts = [f"```text\n$ prbot --help\n{_help_of([])}```\n"]
    for name in _subcommands(root):
        command = next(
            a.choices[name] for a in root._actions if isinstance(a, argparse._SubParsersAction)
        )
        parts.append(
            f"### `prbot {name}`\n\n```text\n$ prbot {name} --help\n{_help_of([name])}```\n"
        )
        for action in _subcommands(command):
            argv = [name, action]
            parts.append(f"```text\n$ prbot {name} {action} --help\n{_help_of(argv)}```\n")
    return "\n".join(parts)


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation)
    text = re.sub(r"typing\.|collections\.abc\.|bot\.[\w.]+\.|pydantic\.[\w.]+\.", "", text)
    text = re.sub(r"Annotated\[(\w+), [^\]]*\]", r"\1", text)
    return text.replace("NoneType", "None")


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return ""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _model_rows(model: type[BaseModel], prefix: str, depth: int, rows: list[str]) -> None:
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        nested = (
            annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel)
            else None
        )
        if nested is not None and depth < 4:
            rows.append(f"| `{key}` | *block* | |")
            _model_rows(nested, f"{key}.", depth + 1, rows)
            continue
        type_text = _type_name(annotation).replace("|", "\\|")
        default = _default(field).replace("|", "\\|")
        rows.append(f"| `{key}` | `{type_text}` | {f'`{default}`' if default else ''} |")


def rules_reference() -> str:
    """Every key a rule file may hold, with its type and built-in default."""
    from bot.report.rules import rule_set_model

    rows = ["| Key | Type | Default |", "| --- | --- | --- |"]
    _model_rows(rule_set_model(), "", 0, rows)
    return "\n".join(rows) + "\n"


GENERATED = {
    "docs/cli.md": ("cli", cli_reference),
    "docs/rules.md": ("rules", rules_reference),
}


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the block between ``name``'s markers replaced by ``body``."""
    start, end = _marker(name)
    if start not in text or end not in text:
        raise ValueError(f"no {name!r} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}{end}{tail}"


def expected(path: str) -> str:
    name, make = GENERATED[path]
    return splice((ROOT / path).read_text(), name, make())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.cli.reference")
    parser.add_argument("--write", action="store_true", help="rewrite the generated blocks")
    args = parser.parse_args(argv)
    stale = []
    for path in GENERATED:
        new = expected(path)
        if new != (ROOT / path).read_text():
            stale.append(path)
            if args.write:
                (ROOT / path).write_text(new)
    for path in stale:
        print(f"{path}: {'rewritten' if args.write else 'out of date'}")
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
