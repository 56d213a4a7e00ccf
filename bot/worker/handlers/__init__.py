"""Event, job and command handlers: one small module each, registered by what they handle.

See :mod:`bot.worker.handlers.registry` for the interface and docs/architecture.md for how to add
one. The worker loop (bot/worker/loop.py) only leases jobs and hands them to :func:`run_job`.
"""

from bot.worker.handlers.registry import (
    REGISTRY,
    CommandCall,
    Event,
    dispatch_event,
    load_handlers,
    on_command,
    on_event,
    on_job,
    run_job,
)

__all__ = [
    "REGISTRY",
    "CommandCall",
    "Event",
    "dispatch_event",
    "load_handlers",
    "on_command",
    "on_event",
    "on_job",
    "run_job",
]
