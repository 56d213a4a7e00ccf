"""``prbot replay``: sign a payload file and POST it like GitHub would."""

from __future__ import annotations

import argparse
import os
import uuid
from pathlib import Path

import httpx

from bot.cli.common import CliError
from bot.events.webhooks import signature_for


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("replay", help="sign and send a webhook payload")
    parser.add_argument("file", help="JSON payload file")
    parser.add_argument("--event", required=True, help="X-GitHub-Event, e.g. pull_request")
    parser.add_argument(
        "--url", required=True, help="webhook URL, e.g. http://host/webhooks/github"
    )
    parser.add_argument(
        "--secret-file",
        help="file whose first line is the secret to sign with (default: PRBOT_WEBHOOK_SECRET)",
    )
    # Refused: a secret in argv is readable by every local user (ps, /proc/<pid>/cmdline) and
    # lands in shell history. Kept only to point at the safe options.
    parser.add_argument("--secret", help=argparse.SUPPRESS)
    parser.add_argument("--delivery", help="X-GitHub-Delivery (default: a new UUID)")
    parser.set_defaults(func=run)


def send(
    url: str,
    event: str,
    body: bytes,
    secret: str,
    delivery: str | None = None,
    client: httpx.Client | None = None,
) -> httpx.Response:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/prbot-replay",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature_for(body, secret),
    }
    if client is not None:
        return client.post(url, content=body, headers=headers)
    return httpx.post(url, content=body, headers=headers, timeout=30)


SECRET_ON_COMMAND_LINE = (
    "--secret is not accepted (the command line is visible to other users); "
    "set PRBOT_WEBHOOK_SECRET or pass --secret-file FILE"
)


def signing_secret(args: argparse.Namespace) -> str:
    """The secret from ``--secret-file``, else the first of ``PRBOT_WEBHOOK_SECRET``."""
    if args.secret is not None:
        raise CliError(SECRET_ON_COMMAND_LINE)
    if args.secret_file:
        try:
            lines = Path(args.secret_file).read_text().splitlines()
        except OSError as exc:
            raise CliError(f"{args.secret_file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise CliError(f"{args.secret_file}: not a text file") from None
        secret = lines[0].strip() if lines else ""
        if not secret:
            raise CliError(f"{args.secret_file}: the first line is empty")
        return secret
    # The first configured secret is the current one during a rotation (``new,old``).
    configured = [s.strip() for s in os.environ.get("PRBOT_WEBHOOK_SECRET", "").split(",")]
    configured = [s for s in configured if s]
    if not configured:
        raise CliError("no secret: set PRBOT_WEBHOOK_SECRET or pass --secret-file FILE")
    return configured[0]


def run(args: argparse.Namespace) -> int:
    secret = signing_secret(args)
    try:
        body = Path(args.file).read_bytes()
    except OSError as exc:
        raise CliError(f"{args.file}: {exc.strerror}") from None
    try:
        response = send(args.url, args.event, body, secret, args.delivery)
    except httpx.HTTPError as exc:
        raise CliError(f"{args.url}: {exc}") from None
    print(f"{response.status_code} {response.text}")
    return 0 if response.is_success else 1
