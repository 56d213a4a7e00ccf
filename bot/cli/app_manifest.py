"""``prbot app-manifest``: the GitHub App manifest with exactly what prbot uses.

Each permission and event carries the reason prbot needs it; tests/test_app_manifest.py
checks them against the calls the whole flow makes on the local GitHub test server and the
events the intake accepts, so the manifest cannot drift from the code.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any
from urllib.parse import urlsplit

from bot.cli.common import CliError
from bot.core.features import (
    FEATURES,
    UnknownFeature,
    events_for,
    parse_features,
    permissions_for,
)

# Every permission and event any feature needs (bot/core/features.py), for the call table
# below; the manifest asks for those of the features switched on.
PERMISSIONS: dict[str, tuple[str, str]] = permissions_for(FEATURES)
EVENTS: dict[str, str] = events_for(FEATURES)
# Needed by features (or reads) the basic flow of the manifest test does not drive.
USED_ELSEWHERE = {
    "contents": "write",
    "actions": "write",
    "members": "read",
    "statuses": "read",  # read only for a selected smoke step
}

# What each REST call prbot makes needs, from GitHub's "permissions required for GitHub
# Apps" pages: (method, path pattern, permission or None for App-JWT calls, level).
ENDPOINT_PERMISSIONS: list[tuple[str, str, str | None, str]] = [
    ("GET", r"/app", None, ""),
    ("GET", r"/app/installations(/\d+)?", None, ""),
    ("POST", r"/app/installations/\d+/access_tokens", None, ""),
    ("GET", r"/app/hook/deliveries", None, ""),
    ("POST", r"/app/hook/deliveries/\d+/attempts", None, ""),
    ("GET", r"/repos/[^/]+/[^/]+/installation", None, ""),
    ("GET", r"/installation/repositories", "metadata", "read"),
    ("GET", r"/repos/[^/]+/[^/]+", "metadata", "read"),
    ("GET", r"/repos/[^/]+/[^/]+/collaborators/[^/]+/permission", "metadata", "read"),
    ("GET", r"/repos/[^/]+/[^/]+/pulls(/\d+(/files|/reviews)?)?", "pull_requests", "read"),
    ("POST", r"/graphql", "pull_requests", "read"),
    ("GET", r"/repos/[^/]+/[^/]+/issues/\d+(/comments)?", "issues", "read"),
    ("POST", r"/repos/[^/]+/[^/]+/issues/\d+/comments", "issues", "write"),
    ("PATCH", r"/repos/[^/]+/[^/]+/issues/comments/\d+", "issues", "write"),
    ("POST", r"/repos/[^/]+/[^/]+/issues/comments/\d+/reactions", "issues", "write"),
    ("GET", r"/repos/[^/]+/[^/]+/commits/[^/]+/check-runs", "checks", "read"),
    ("GET", r"/repos/[^/]+/[^/]+/commits/[^/]+/status", "statuses", "read"),
    ("POST", r"/repos/[^/]+/[^/]+/check-runs", "checks", "write"),
    ("PATCH", r"/repos/[^/]+/[^/]+/check-runs/\d+", "checks", "write"),
    ("GET", r"/[^/]+/[^/]+\.git/info/refs", "contents", "read"),
    ("POST", r"/[^/]+/[^/]+\.git/git-upload-pack", "contents", "read"),
]


def check_webhook_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"--webhook-url must be an http(s) URL, got {url!r}")


def permission_for(method: str, path: str) -> tuple[str | None, str] | None:
    """(permission, level) a call needs; None when the table does not know the call."""
    for wanted_method, pattern, permission, level in ENDPOINT_PERMISSIONS:
        if wanted_method == method and re.fullmatch(pattern, path):
            return permission, level
    return None


def manifest(
    webhook_url: str,
    *,
    name: str = "prbot",
    homepage: str = "https://github.com/apps/prbot",
    redirect_url: str | None = None,
    public: bool = False,
    features: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The manifest GitHub's "register from a manifest" flow takes: advisory's permissions
    and events, plus those of ``features``, and nothing more."""
    permissions = permissions_for(features)
    body: dict[str, Any] = {
        "name": name,
        "url": homepage,
        "description": "One structured report per pull-request head.",
        "hook_attributes": {"url": webhook_url, "active": True},
        "public": public,
        "default_permissions": {name: level for name, (level, _) in permissions.items()},
        "default_events": list(events_for(features)),
    }
    if redirect_url is not None:
        body["redirect_url"] = redirect_url
    return body


def explained(features: tuple[str, ...] = ()) -> str:
    """The permissions and events with their reasons, as comment lines."""
    lines = [f"# features: {', '.join(features) or 'none (advisory)'}", "# permissions"]
    lines += [
        f"#   {p}: {level:<5}  {why}" for p, (level, why) in permissions_for(features).items()
    ]
    lines += ["# events"]
    lines += [f"#   {e}: {why}" for e, why in events_for(features).items()]
    return "\n".join(lines)


def features_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--features",
        default="",
        help=f"comma-separated: {','.join(FEATURES)} (default: none, advisory)",
    )


def chosen_features(args: argparse.Namespace) -> tuple[str, ...]:
    try:
        return parse_features(getattr(args, "features", ""))
    except UnknownFeature as exc:
        raise CliError(f"--features: {exc}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "app-manifest", help="print the GitHub App manifest (permissions and events prbot uses)"
    )
    parser.add_argument("--webhook-url", required=True, help="https://<your host>/webhooks/github")
    parser.add_argument("--name", default="prbot", help="the App's name on GitHub")
    parser.add_argument("--homepage", default="https://github.com/apps/prbot")
    parser.add_argument(
        "--explain", action="store_true", help="print why each permission and event is needed"
    )
    features_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_webhook_url(args.webhook_url)
    features = chosen_features(args)
    if args.explain:
        print(explained(features))
        return 0
    body = manifest(args.webhook_url, name=args.name, homepage=args.homepage, features=features)
    print(json.dumps(body, indent=2))
    return 0
