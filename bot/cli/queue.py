"""``prbot queue list|retry|stats|rejected``: the job queue, dead letters, refused deliveries."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from bot.cli.common import CliError
from bot.store.db import (
    DatabaseUrlError,
    current_revision,
    default_database_url,
    make_engine,
    migrate,
)
from bot.store.deliveries import rejected_deliveries
from bot.store.queue import Job, Queue
from bot.store.schema import JOB_STATES

ERROR_PREVIEW_CHARS = 60


def register(subparsers: argparse._SubParsersAction) -> None:
    database = argparse.ArgumentParser(add_help=False)
    database.add_argument(
        "--database-url",
        help="database URL (default: PRBOT_DATABASE_URL, else the SQLite file in PRBOT_DATA_DIR)",
    )
    parser = subparsers.add_parser("queue", help="inspect the job queue, re-queue dead letters")
    actions = parser.add_subparsers(dest="queue_command", required=True, metavar="ACTION")

    listing = actions.add_parser("list", parents=[database], help="list jobs, newest first")
    listing.add_argument("--state", choices=JOB_STATES, help="only jobs in this state")
    listing.add_argument("--limit", type=positive_int, default=50, help="at most N jobs (50)")
    listing.set_defaults(func=list_jobs)

    retry = actions.add_parser("retry", parents=[database], help="re-queue dead letters")
    which = retry.add_mutually_exclusive_group(required=True)
    which.add_argument("id", nargs="?", type=positive_int, help="the dead job to re-queue")
    which.add_argument("--all", action="store_true", help="re-queue every dead job")
    retry.set_defaults(func=retry_jobs)

    stats = actions.add_parser("stats", parents=[database], help="job counts per state and kind")
    stats.set_defaults(func=show_stats)

    rejected = actions.add_parser(
        "rejected", parents=[database], help="signed deliveries refused at intake, and why"
    )
    rejected.add_argument("--limit", type=positive_int, default=50, help="at most N (50)")
    rejected.set_defaults(func=list_rejected)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def open_engine(args: argparse.Namespace) -> Engine:
    """The chosen database, brought to the current schema. A database that does not exist, or
    holds no prbot schema, is an error: inspecting the queue must never create one."""
    url = args.database_url or default_database_url(create_dir=False)
    try:
        missing = sqlite_file_missing(url)
        if missing is not None:
            raise CliError(f"no prbot database at {missing} (nothing has run here yet?); {HINT}")
        engine = make_engine(url)
        if current_revision(engine) is None:
            engine.dispose()
            raise CliError(f"{make_url(url).render_as_string()} holds no prbot database; {HINT}")
        migrate(engine)
    except DatabaseUrlError as exc:
        raise CliError(str(exc)) from None
    except CliError:
        raise
    except Exception as exc:  # driver errors: unreachable server, unreadable file
        raise CliError(f"cannot open the database: {first_line(exc)}") from None
    return engine


HINT = "name it with --database-url or PRBOT_DATABASE_URL (or PRBOT_DATA_DIR)"


def sqlite_file_missing(url: str) -> str | None:
    """The path of a file-backed SQLite URL whose file does not exist, else None."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # make_engine names the problem
    if not parsed.drivername.startswith("sqlite") or parsed.database in (None, "", ":memory:"):
        return None
    return None if Path(parsed.database).is_file() else parsed.database


def open_queue(args: argparse.Namespace) -> Queue:
    """The queue of the chosen database, migrated to the current schema."""
    return Queue(open_engine(args))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell; the last column is left ragged."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    for line in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)]
        print("  ".join([*cells, line[-1]]).rstrip())


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def preview(error: str | None) -> str:
    if not error:
        return ""
    line = error.strip().splitlines()[-1] if error.strip() else ""
    return line if len(line) <= ERROR_PREVIEW_CHARS else line[: ERROR_PREVIEW_CHARS - 1] + "…"


def printable(text: str) -> str:
    """``text`` with control characters (terminal escapes included) shown as ``?``.

    Job keys, errors and rejection reasons carry text from payloads someone else wrote.
    """
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def job_row(job: Job) -> list[str]:
    return [
        str(job.id),
        job.state,
        job.kind,
        str(job.attempts),
        when(job.created_at),
        when(job.run_after),
        printable(job.dedupe_key or "-"),
        printable(preview(job.last_error)),
    ]


def list_jobs(args: argparse.Namespace) -> int:
    queue = open_queue(args)
    found = queue.jobs(state=args.state, limit=args.limit)
    if not found:
        print(f"no {args.state or ''} jobs".replace("  ", " "))
        return 0
    header = ["ID", "STATE", "KIND", "ATTEMPTS", "CREATED", "RUN AFTER", "DEDUPE KEY", "ERROR"]
    print_table(header, [job_row(job) for job in found])
    return 0


def retry_jobs(args: argparse.Namespace) -> int:
    queue = open_queue(args)
    if args.all:
        count = queue.retry_dead()
        print(f"re-queued {count} dead job{'s' if count != 1 else ''}")
        return 0
    job = queue.get(args.id)
    if job is None:
        raise CliError(f"no job {args.id}")
    if job.state != "dead":
        raise CliError(f"job {args.id} is {job.state}, not dead; only dead jobs are retried")
    if queue.retry_dead(args.id) == 0:
        print(f"job {args.id} closed: a newer queued job with its dedupe key does the work")
    else:
        print(f"re-queued job {args.id}")
    return 0


def show_stats(args: argparse.Namespace) -> int:
    queue = open_queue(args)
    depth = queue.depth()
    by_kind = queue.depth_by_kind()
    header = ["KIND", *[state.upper() for state in JOB_STATES]]
    rows = [
        [kind, *(str(counts[state]) for state in JOB_STATES)] for kind, counts in by_kind.items()
    ]
    rows.append(["total", *(str(depth[state]) for state in JOB_STATES)])
    print_table(header, rows)
    return 0


def list_rejected(args: argparse.Namespace) -> int:
    found = rejected_deliveries(open_engine(args), limit=args.limit)
    if not found:
        print("no rejected deliveries")
        return 0
    header = ["ID", "RECEIVED", "EVENT", "ACTION", "GUID", "REASON"]
    rows = [
        [
            str(d.id),
            when(d.received_at),
            printable(d.event),
            printable(d.action or "-"),
            printable(d.guid),
            printable(d.reason or ""),
        ]
        for d in found
    ]
    print_table(header, rows)
    return 0
