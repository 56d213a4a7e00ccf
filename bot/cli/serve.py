"""``prbot serve`` (the GitHub App: intake + in-process worker) and ``prbot worker``."""

from __future__ import annotations

import argparse
import signal
import threading

import uvicorn

from bot.cli.common import CliError, progress
from bot.config import ConfigError, Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser("serve", help="run the GitHub App webhook server")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--dry-run",
        action="store_true",
        help="write nothing to GitHub or CI; log and store the report",
    )
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="intake only; run `prbot worker` processes separately",
    )
    serve.set_defaults(func=run_serve)

    worker = subparsers.add_parser("worker", help="run a queue consumer on its own")
    worker.add_argument("--dry-run", action="store_true")
    worker.add_argument(
        "--threads",
        type=int,
        default=None,
        help="worker threads (default: PRBOT_WORKER_THREADS or 2)",
    )
    worker.set_defaults(func=run_worker)


def _service(args: argparse.Namespace):  # noqa: ANN202
    from bot.service import Service

    try:
        return Service.from_settings(Settings.from_env(dry_run=args.dry_run))
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def run_serve(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        app = service.asgi_app(with_worker=not args.no_worker)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    progress(f"listening on {args.host}:{args.port}{' (dry run)' if args.dry_run else ''}")
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def run_worker(args: argparse.Namespace) -> int:
    service = _service(args)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threads = args.threads or service.settings.worker_threads
    progress(f"worker started ({threads} thread{'s' if threads != 1 else ''})")
    from bot.server import start_worker_threads

    for thread in start_worker_threads(service.worker, service.queue(), threads, stop):
        while thread.is_alive():
            thread.join(timeout=1)  # short joins keep the main thread responsive to signals
    return 0
