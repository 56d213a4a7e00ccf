"""``prbot rules schema|validate``: the rule-file JSON Schema, and checking a rule file."""

from __future__ import annotations

import argparse

from bot.cli.common import CliError
from bot.report import rules


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rules", help="print the rules JSON Schema or validate a file")
    actions = parser.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    schema = actions.add_parser("schema", help="print the JSON Schema of rule files")
    schema.set_defaults(func=lambda args: print(rules.schema_json()))
    check = actions.add_parser("validate", help="validate a rule file (exit 0 when valid)")
    check.add_argument("file")
    check.set_defaults(func=validate)


def validate(args: argparse.Namespace) -> int:
    try:
        rules.load_file(args.file)
    except rules.RulesError as exc:
        raise CliError(str(exc)) from None
    print(f"{args.file}: valid")
    return 0
