"""``installation`` handler: the installation is recorded, its repositories indexed."""

from __future__ import annotations

from bot.store import state
from bot.worker.handlers.installation import on_installation
from bot.worker.handlers.registry import Event


def _event(action: str, payload: dict) -> Event:
    return Event("installation", action, payload, delivery_id=1)


def test_created_records_the_installation_and_queues_a_reconcile_per_repository(
    handler_context,
):
    payload = {
        "installation": {"id": 42, "account": {"login": "acme"}},
        "repositories": [{"full_name": "acme/a"}, {"full_name": "acme/b"}],
    }
    on_installation(handler_context, _event("created", payload))
    installation = state.get_installation(handler_context.engine, 42)
    assert (installation.account, installation.repositories) == ("acme", ["acme/a", "acme/b"])
    reconciles = [j.payload["repo"] for j in handler_context.queue.jobs() if j.kind == "reconcile"]
    assert sorted(reconciles) == ["acme/a", "acme/b"]


def test_deleted_is_recorded_and_queues_nothing(handler_context):
    payload = {"installation": {"id": 42, "account": {"login": "acme"}}, "repositories": []}
    on_installation(handler_context, _event("deleted", payload))
    assert state.get_installation(handler_context.engine, 42).deleted
    assert handler_context.queue.jobs() == []


def test_an_event_without_an_installation_id_is_ignored(handler_context):
    on_installation(handler_context, _event("created", {"installation": {"id": "x"}}))
    assert state.get_installation(handler_context.engine, 0) is None
    assert handler_context.queue.jobs() == []
