"""``prbot check --pr OWNER/REPO#N``: a pull request on GitHub, checked as the service would.

Like ``danger pr URL``: the PR is read through the API (token from ``GITHUB_TOKEN`` or
``GH_TOKEN``, API from ``PRBOT_GITHUB_API_URL``), its base and head fetched into a local
mirror under the data dir (bot/local/mirror.py, the service's own), and the same runner builds the
report. Trust is the author's association with the repository, as on the server, not the
"you own this checkout" of a local run.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from bot.cli.check_report import cli_data_dir, load_rules, report_and_exit
from bot.cli.common import CliError, step
from bot.core.snapshot import Snapshot, snapshot_from_pull
from bot.github.pulls import pull_summary
from bot.local.git import GitError
from bot.local.mirror import RepoMirror, StaleHead
from bot.report import runner

_SPEC = re.compile(
    r"^(?P<repo>[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100})#(?P<n>\d{1,9})$"
)
_URL = re.compile(
    r"^https?://[^/\s]+/(?P<repo>[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100})"
    r"/pull/(?P<n>\d{1,9})(?:[/?#].*)?$"
)
# Where git may fetch from: the API's own answer, over the web transports only.
_CLONE_URL = re.compile(r"^https?://[^\s]+$")


def parse_pr(spec: str) -> tuple[str, int]:
    """``OWNER/REPO#N`` or a PR URL -> (full name, number). Only the path of a URL is read:
    the API named by PRBOT_GITHUB_API_URL is what is asked, never the URL's host."""
    match = _SPEC.match(spec.strip()) or _URL.match(spec.strip())
    if match is None or int(match["n"]) < 1:
        raise CliError(
            f"--pr: {spec[:200]!r} is not OWNER/REPO#N or https://HOST/OWNER/REPO/pull/N"
        )
    return match["repo"], int(match["n"])


def token_from_env() -> str | None:
    return os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or None


def fetch_pull(full_name: str, number: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the pull request, its base repository) as the API returns them."""
    from github import GithubException

    from bot.cli.export_prs import _client

    try:
        pull = _client().get_repo(full_name).get_pull(number)
        raw = pull.raw_data
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        raise CliError(
            f"--pr: GitHub answered {exc.status} for {full_name}#{number}: "
            f"{message or 'no message'}"
        ) from None
    except OSError as exc:
        raise CliError(f"--pr: cannot reach GitHub for {full_name}#{number}: {exc}") from None
    repository = (raw.get("base") or {}).get("repo") or {}
    return raw, repository


def snapshot_for_pull(
    mirror: RepoMirror, full_name: str, pull: dict[str, Any], args: argparse.Namespace
) -> tuple[Snapshot, runner.LoadedRules]:
    """The PR head as the checks see it; rules from the base, trust from the association."""
    return snapshot_from_pull(
        mirror.path,
        full_name,
        pull,
        rules_from=lambda base: load_rules(args, base),
        trusted_by=lambda loaded: runner.decide_trust(pull["author_association"], loaded.ruleset),
    )


def html_base_of(repository: dict[str, Any], full_name: str) -> str:
    html_url = repository.get("html_url") or ""
    return html_url[: -len(full_name) - 1] if html_url.endswith(f"/{full_name}") else ""


def check_pull_request(args: argparse.Namespace) -> int:
    full_name, number = parse_pr(args.pr)
    with step(f"reading {full_name}#{number}"):
        raw, repository = fetch_pull(full_name, number)
    clone_url = repository.get("clone_url") or ""
    if not _CLONE_URL.match(clone_url):
        raise CliError(f"--pr: GitHub gave no usable clone URL for {full_name}")
    try:
        pull = pull_summary(raw)
    except (KeyError, TypeError):
        raise CliError(
            f"--pr: GitHub's answer for {full_name}#{number} has no head or base"
        ) from None
    mirror = RepoMirror(cli_data_dir(), full_name, clone_url)
    try:
        with step(f"fetching {pull['head_sha'][:12]} and its base into {mirror.path}"):
            mirror.fetch_pull(
                token_from_env(), number, pull["base_ref"], pull["base_sha"], pull["head_sha"]
            )
        snapshot, loaded = snapshot_for_pull(mirror, full_name, pull, args)
    except (GitError, StaleHead) as exc:
        raise CliError(f"--pr: cannot fetch {full_name}#{number}: {exc}") from None
    return report_and_exit(args, snapshot, loaded, html_base=html_base_of(repository, full_name))
