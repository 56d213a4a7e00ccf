"""The handler registry: events by name and action, one handler per job kind, commands."""

from __future__ import annotations

import pytest

from bot.worker.handlers import registry
from bot.worker.handlers.registry import (
    Event,
    dispatch_event,
    on_command,
    on_event,
    on_job,
    run_job,
)

SEEN: list[tuple[str, str]] = []


@on_event("test-registry-event", "opened", "closed")
def _opened_or_closed(ctx, event):
    SEEN.append(("some", event.action))


@on_event("test-registry-event")
def _any_action(ctx, event):
    SEEN.append(("any", event.action))


def _event(action: str) -> Event:
    return Event("test-registry-event", action, {}, delivery_id=1)


def test_handlers_are_chosen_by_event_and_action():
    SEEN.clear()
    assert dispatch_event(None, _event("opened")) == 2
    assert dispatch_event(None, _event("labeled")) == 1
    assert SEEN == [("some", "opened"), ("any", "opened"), ("any", "labeled")]
    # An event nobody handles is done, not an error.
    assert dispatch_event(None, Event("star", "created", {}, 2)) == 0


def test_a_job_kind_has_one_handler():
    @on_job("test-registry-kind")
    def first(ctx, payload):
        payload["ran"] = True

    with pytest.raises(ValueError, match="already handled"):

        @on_job("test-registry-kind")
        def second(ctx, payload):  # pragma: no cover - never registered
            pass

    payload: dict = {}
    run_job(None, "test-registry-kind", payload)
    assert payload == {"ran": True}
    with pytest.raises(registry.UnknownJob):
        run_job(None, "test-registry-missing", {})


def test_the_built_in_handlers_are_registered_by_their_modules():
    registry.load_handlers()
    assert {"delivery", "pipeline", "reconcile"} <= set(registry.REGISTRY.jobs)
    assert registry.command_handler("recheck") is not None
    names = {name for name, _, _ in registry.REGISTRY.events}
    assert {"pull_request", "issue_comment", "installation"} <= names


def test_commands_register_by_name():
    @on_command("test-registry-command")
    def handle(ctx, call):  # pragma: no cover - only looked up
        pass

    assert registry.command_handler("test-registry-command") is handle
