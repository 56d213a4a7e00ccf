"""``prbot serve`` (the GitHub App: intake + supervised worker processes) and ``prbot worker``."""

from __future__ import annotations

import argparse
import signal
import threading

import uvicorn

from bot.cli.common import CliError, progress
from bot.runtime.settings import ConfigError, Settings


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
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes to supervise (default: PRBOT_WORKER_PROCESSES or 1)",
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


def _service(args: argparse.Namespace, *, github: bool = True):  # noqa: ANN202
    from sqlalchemy.exc import SQLAlchemyError

    from bot.service import Service
    from bot.store.db import DatabaseUrlError

    try:
        settings = Settings.from_env(dry_run=args.dry_run)
        # Everything is checked before anything starts: never a half-started service.
        settings.check_startup(github=github, intake=args.command == "serve")
        settings.protect_files()
        return Service.from_settings(settings, github=github)
    except (ConfigError, DatabaseUrlError) as exc:
        raise CliError(str(exc)) from None
    except SQLAlchemyError as exc:
        reason = str(exc.orig if getattr(exc, "orig", None) else exc).splitlines()[0]
        raise CliError(f"PRBOT_DATABASE_URL: cannot open the database: {reason}") from None


def run_serve(args: argparse.Namespace) -> int:
    import shutil

    from bot.intake.httpserver import uvicorn_config
    from bot.runtime import metrics
    from bot.runtime.supervisor import WorkerSupervisor, worker_command, worker_environment

    # The App key is checked here (one line, exit 2) when this process starts workers, so a
    # bad key never leaves a supervisor restarting workers that cannot start; intake alone
    # (--no-worker) needs only the webhook secret.
    service = _service(args, github=not args.no_worker)
    settings = service.settings
    from bot.store.inbox import InboxUnavailable

    try:
        app = service.asgi_app(with_worker=False)
    except (ConfigError, InboxUnavailable) as exc:
        raise CliError(str(exc)) from None
    supervisor = None
    if not args.no_worker:
        count = args.workers or settings.worker_processes
        if count < 1:
            raise CliError("--workers must be at least 1 (or use --no-worker)")
        metrics_dir = settings.data_dir.resolve() / "worker-metrics"
        shutil.rmtree(metrics_dir, ignore_errors=True)  # counters of an earlier run
        metrics_dir.mkdir(parents=True)
        metrics.read_worker_processes(metrics_dir)
        supervisor = WorkerSupervisor(
            worker_command(dry_run=args.dry_run),
            count=count,
            env=worker_environment(str(metrics_dir)),
            on_start=lambda slot, pid: progress(f"worker {slot} started (pid {pid})"),
        ).start()
    mode = " (dry run)" if args.dry_run else ""
    progress(f"listening on {args.host}:{args.port}{mode}")
    # No access log: one synchronous stderr write per request on the event loop; deliveries
    # are counted in /metrics and refusals logged by the app.
    # log_config=None: uvicorn's lines go through prbot's handler (format, redaction).
    config = uvicorn_config(
        app,
        settings,
        host=args.host,
        port=args.port,
        log_level="info",
        access_log=False,
        log_config=None,
    )
    # uvicorn handles SIGTERM/SIGINT itself, then re-raises the signal to the handler it found
    # installed; with the default one that would kill serve before it stops its workers.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    try:
        uvicorn.Server(config).run()
    finally:
        if supervisor is not None:
            progress("stopping workers")
            supervisor.stop()
    return 0


def run_worker(args: argparse.Namespace) -> int:
    from bot.runtime.supervisor import (
        apply_memory_limit,
        die_with_supervisor,
        lower_priority_if_supervised,
    )

    die_with_supervisor()
    lower_priority_if_supervised()
    service = _service(args)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # After startup (imports, migrations), so the limit bounds the work, not the setup.
    apply_memory_limit(service.settings.worker_memory_mb)
    threads = args.threads or service.settings.worker_threads
    if service.app is not None and service.settings.repair_interval > 0:
        # On start: what GitHub could not deliver while no worker ran (bot/repair/redeliver.py).
        from bot.worker.handlers.repair import schedule_repair

        schedule_repair(service.queue(), {}, 0)
    progress(f"worker started ({threads} thread{'s' if threads != 1 else ''})")
    from bot.worker.loop import start_worker_threads

    for thread in start_worker_threads(service.worker, service.queue(), threads, stop):
        while thread.is_alive():
            thread.join(timeout=1)  # short joins keep the main thread responsive to signals
    return 0
