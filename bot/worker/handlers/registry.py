"""One interface for everything the worker reacts to, registered by what it reacts to.

A handler is a function in a module under ``bot/worker/handlers/`` (or any package handed to
:func:`load_handlers`), registered with one of three decorators:

- ``@on_event("pull_request", "opened", ...)``: a stored webhook delivery, by event name and
  (optionally) action. Called as ``fn(ctx, event)``.
- ``@on_job("pipeline")``: a queue job of that kind. Called as ``fn(ctx, payload)``.
- ``@on_command("recheck")``: a command typed in a PR comment, after the command parser and
  the permission check for that command have passed. Called as ``fn(ctx, call)``.

The worker loop knows none of them: it leases a job and hands it to :func:`run_job`. Adding a
handler is adding a module; nothing else is edited (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.events.commands import Command
    from bot.github.app import InstallationClient
    from bot.worker.handlers.context import HandlerContext


@dataclass(frozen=True)
class Event:
    """One stored webhook delivery, as a handler sees it."""

    name: str  # "pull_request", "issue_comment", "check_run", "buildkite", ...
    action: str  # the payload's action; for CI engines their own event name ("job.finished")
    payload: dict[str, Any]
    delivery_id: int


@dataclass(frozen=True)
class CommandCall:
    """One command from one comment, parsed and allowed."""

    command: Command
    repo: str
    number: int
    commenter: str
    comment: dict[str, Any]
    payload: dict[str, Any]
    client: InstallationClient | None
    ruleset: Any  # the repository's rules (bot.report.rules.rule_set_model())

    @property
    def argument(self) -> str:
        return self.command.argument


EventHandler = Callable[["HandlerContext", Event], None]
JobHandler = Callable[["HandlerContext", dict[str, Any]], None]
CommandHandler = Callable[["HandlerContext", CommandCall], None]


@dataclass
class Registry:
    """What is registered; one per process, filled by importing handler modules."""

    events: list[tuple[str, frozenset[str], EventHandler]] = field(default_factory=list)
    jobs: dict[str, JobHandler] = field(default_factory=dict)
    commands: dict[str, CommandHandler] = field(default_factory=dict)

    def handlers_for(self, name: str, action: str) -> list[EventHandler]:
        return [
            fn
            for event, actions, fn in self.events
            if event == name and (not actions or action in actions)
        ]


REGISTRY = Registry()


def on_event(name: str, *actions: str) -> Callable[[EventHandler], EventHandler]:
    """Register ``fn(ctx, event)`` for deliveries of ``name`` (any action unless listed)."""

    def register(fn: EventHandler) -> EventHandler:
        REGISTRY.events.append((name, frozenset(actions), fn))
        return fn

    return register


def on_job(kind: str) -> Callable[[JobHandler], JobHandler]:
    """Register ``fn(ctx, payload)`` as the one handler of queue jobs of ``kind``."""

    def register(fn: JobHandler) -> JobHandler:
        existing = REGISTRY.jobs.get(kind)
        if existing is not None and existing is not fn and _qualname(existing) != _qualname(fn):
            raise ValueError(f"job kind {kind!r} already handled by {_qualname(existing)}")
        REGISTRY.jobs[kind] = fn
        return fn

    return register


def on_command(name: str) -> Callable[[CommandHandler], CommandHandler]:
    """Register ``fn(ctx, call)`` for the command ``name`` (its spellings come from rules)."""

    def register(fn: CommandHandler) -> CommandHandler:
        REGISTRY.commands[name] = fn
        return fn

    return register


def _qualname(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


_LOADED: set[str] = set()


def load_handlers(package: str = "bot.worker.handlers") -> list[ModuleType]:
    """Import every module of ``package`` once, so their decorators register them."""
    root = importlib.import_module(package)
    modules = []
    for info in pkgutil.iter_modules(root.__path__, prefix=f"{package}."):
        if info.name in _LOADED:
            continue
        modules.append(importlib.import_module(info.name))
        _LOADED.add(info.name)
    return modules


class UnknownJob(ValueError):
    """A queue job of a kind no handler claims (an old row, or a handler removed)."""


def dispatch_event(ctx: HandlerContext, event: Event) -> int:
    """Run every handler registered for ``event``; returns how many ran. An event no handler
    wants (``star``, ``push``) is done, not an error."""
    load_handlers()
    handlers = REGISTRY.handlers_for(event.name, event.action)
    for fn in handlers:
        fn(ctx, event)
    return len(handlers)


def run_job(ctx: HandlerContext, kind: str, payload: dict[str, Any]) -> None:
    """Hand one queue job to the handler of its kind (raising makes the worker retry it)."""
    load_handlers()
    fn = REGISTRY.jobs.get(kind)
    if fn is None:
        raise UnknownJob(f"unknown job kind {kind!r}")
    fn(ctx, payload)


def command_handler(name: str) -> CommandHandler | None:
    load_handlers()
    return REGISTRY.commands.get(name)
