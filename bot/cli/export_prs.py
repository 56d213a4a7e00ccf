"""``prbot export-prs OWNER/REPO``: a repository's pull requests as the PR export JSONL.

The export is what ``prbot duplicates --prs`` and ``prbot check --open-prs`` read (README,
"PR export record"). Records are written as they arrive, so a large repository never sits in
memory, and a run cut short leaves every line written so far usable.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from bot.cli.common import CliError, progress

EXAMPLES = """\
examples:
  GITHUB_TOKEN=... prbot export-prs vllm-project/vllm --limit 500 --out open-prs.jsonl
  prbot duplicates --prs open-prs.jsonl --top 5
"""

_REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
# GitHub lists at most 3,000 files of a PR; the audit needs far fewer to see overlap.
MAX_FILES_PER_PR = 300


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export-prs",
        help="write a repository's pull requests as a PR export (JSONL)",
        description="Write a repository's pull requests, one JSON record per line, in the "
        "shape `prbot duplicates --prs` and `prbot check --open-prs` read. The token comes "
        "from GITHUB_TOKEN or GH_TOKEN (none is needed for a public repository, within "
        "GitHub's anonymous rate limit); the API from PRBOT_GITHUB_API_URL.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("repo", metavar="OWNER/REPO", help="the repository")
    parser.add_argument(
        "--state", choices=["open", "closed", "all"], default="open", help="default: open"
    )
    parser.add_argument(
        "--limit", type=int, default=None, metavar="N", help="at most N pull requests, newest first"
    )
    parser.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    parser.add_argument(
        "--no-patches",
        action="store_true",
        help="paths and line counts only (smaller; the audit then has no added code to compare)",
    )
    parser.set_defaults(func=run)


def pull_record(pull: Any, files: list[Any] | None) -> dict[str, Any]:
    """One PyGithub pull request (and its files) as a PR export record."""
    record: dict[str, Any] = {
        "number": pull.number,
        "title": pull.title or "",
        "body": pull.body or "",
        "author": pull.user.login if pull.user else None,
        "created_at": pull.created_at.isoformat() if pull.created_at else None,
        "state": pull.state,
        "head_sha": pull.head.sha if pull.head else None,
    }
    if files is not None:
        record["files"] = [
            {
                "path": changed.filename,
                "additions": changed.additions,
                "deletions": changed.deletions,
                **({"patch": changed.patch} if changed.patch is not None else {}),
            }
            for changed in files
        ]
    return record


def export(
    gh: Any, full_name: str, *, state: str, limit: int | None, patches: bool
) -> Iterator[dict[str, Any]]:
    repo = gh.get_repo(full_name)
    for count, pull in enumerate(repo.get_pulls(state=state, sort="created", direction="desc")):
        if limit is not None and count >= limit:
            return
        files = []
        for index, changed in enumerate(pull.get_files()):
            if index >= MAX_FILES_PER_PR:
                break
            files.append(changed)
        record = pull_record(pull, files)
        if not patches:
            for entry in record["files"]:
                entry.pop("patch", None)
        yield record


def _client() -> Any:
    from github import Auth, Github

    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
    api = os.environ.get("PRBOT_GITHUB_API_URL", "").strip().rstrip("/") or None
    options: dict[str, Any] = {"per_page": 100, "timeout": 30}
    if api:
        options["base_url"] = api
    return Github(auth=Auth.Token(token) if token else None, **options)


def run(args: argparse.Namespace) -> int:
    from github import GithubException

    if not _REPO.match(args.repo):
        raise CliError(f"{args.repo!r} is not OWNER/REPO")
    if args.limit is not None and args.limit < 1:
        raise CliError("--limit must be at least 1")
    out: TextIO = sys.stdout
    written = 0
    try:
        if args.out:
            try:
                out = open(args.out, "w", encoding="utf-8")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise CliError(f"--out: cannot write {args.out}: {exc.strerror}") from None
        records = export(
            _client(), args.repo, state=args.state, limit=args.limit, patches=not args.no_patches
        )
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
            if written % 100 == 0:
                out.flush()
                progress(f"{written} pull requests…")
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        raise CliError(
            f"GitHub answered {exc.status} for {args.repo}: {message or 'no message'}"
            + (f" ({written} written)" if written else "")
        ) from None
    except OSError as exc:
        raise CliError(f"cannot reach GitHub for {args.repo}: {exc}") from None
    finally:
        if out is not sys.stdout:
            out.close()
    progress(f"{written} pull request{'s' if written != 1 else ''} exported")
    return 0
