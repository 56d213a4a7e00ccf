"""``prbot replay``: sign a payload file and POST it like GitHub would."""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

import httpx

from bot.cli.common import CliError
from bot.webhooks import signature_for


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("replay", help="sign and send a webhook payload")
    parser.add_argument("file", help="JSON payload file")
    parser.add_argument("--event", required=True, help="X-GitHub-Event, e.g. pull_request")
    parser.add_argument(
        "--url", required=True, help="webhook URL, e.g. http://host/webhooks/github"
    )
    parser.add_argument("--secret", required=True, help="webhook secret to sign with")
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


def run(args: argparse.Namespace) -> int:
    try:
        body = Path(args.file).read_bytes()
    except OSError as exc:
        raise CliError(f"{args.file}: {exc.strerror}") from None
    try:
        response = send(args.url, args.event, body, args.secret, args.delivery)
    except httpx.HTTPError as exc:
        raise CliError(f"{args.url}: {exc}") from None
    print(f"{response.status_code} {response.text}")
    return 0 if response.is_success else 1
