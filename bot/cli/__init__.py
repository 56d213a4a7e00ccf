"""``prbot`` command line. Each subcommand is a module here exporting ``register(subparsers)``.

Errors a user can fix are raised as :class:`CliError` and printed as one line with a
non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys

from bot.cli.common import CliError

__all__ = ["CliError", "build_parser", "main"]


def version() -> str:
    """The installed distribution's version (pyproject.toml's, once installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("prbot")
    except PackageNotFoundError:
        return "unknown (not installed)"


def command_names() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.iter_modules(__path__)
        if not m.name.startswith("_") and m.name != "common"
    )


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser. With ``argv`` naming a command, only that command's module is imported,
    so ``prbot docs`` does not pay for importing the web server and the database layer."""
    parser = argparse.ArgumentParser(
        prog="prbot",
        description="A GitHub App that writes one structured report per pull-request head.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument(
        "--version", action="version", version=f"prbot {version()}", help="print the version"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = command_names()
    chosen = next((arg for arg in argv or [] if not arg.startswith("-")), None)
    for name in [chosen] if chosen in names else names:
        module = importlib.import_module(f"{__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    from bot.runtime.logs import configure

    named = os.environ.get("PRBOT_LOG_LEVEL", "WARNING").strip().upper()
    level = (
        logging.DEBUG
        if args.verbose
        else logging.getLevelNamesMapping().get(named, logging.WARNING)
    )
    # A bad PRBOT_LOG_FORMAT falls back to text here; serve and worker refuse it at start.
    fmt = os.environ.get("PRBOT_LOG_FORMAT", "text").lower()
    configure(level, fmt, secrets=os.environ.get("PRBOT_WEBHOOK_SECRET", "").split(","))
    try:
        result = args.func(args)
    except CliError as exc:
        print(f"prbot: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
