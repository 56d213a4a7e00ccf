"""A build's news (a ``workflow_run`` or a Buildkite delivery) into the records it is for.

A job's result comes only from the build prbot created. A record is bound to its build's
id when the dispatch returns (bot/worker/ci/dispatch.py), and news is matched by that id.
Nothing in a delivery binds on its own: a fork PR's workflow can name its run like prbot's,
and a PR's code can set a build's meta-data. When news names a dispatch whose build is not
recorded yet (a crash between create and record, or GitHub still queueing the run), the
engine's own API is asked which build that dispatch made, and only that one is bound.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa

from bot.engines.base import BuildRef, Engine, EngineError
from bot.runtime.locks import named_lock
from bot.store import jobs as store
from bot.worker.ci.flow import Services, republish
from bot.worker.ci.results import refresh_build
from bot.worker.ci.signal import classify_failures

log = logging.getLogger(__name__)


def installation_of(db: sa.Engine, record: store.JobRecord) -> int | None:
    """The installation a record's head was reported under (its kept report's context)."""
    kept = store.load_full_report(db, record.key.repo, record.key.number, record.key.head_sha)
    found = kept[1].get("installation_id") if kept else None
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def records_for_news(
    db: sa.Engine, engine_name: str, build_id: str, dispatch_key: str | None
) -> tuple[list[store.JobRecord], bool]:
    """The records a build's news may be for, and whether they still wait for their build.

    Bound records by the build's id; else the records of the dispatch the news names, while
    that dispatch has no build recorded (they are bound only once the engine confirms it).
    """
    bound = store.records_for_build(db, engine_name, build_id)
    if bound or not dispatch_key:
        return bound, False
    waiting = [
        r
        for r in store.records_for_dispatch(db, dispatch_key)
        if r.engine == engine_name and r.awaiting_build
    ]
    return waiting, bool(waiting)


def bind_reported_build(
    services: Services, build: BuildRef, waiting: list[store.JobRecord]
) -> bool:
    """Bind the records of one dispatch still waiting for their build to ``build``, if the
    engine lists it as the build made under their key; False (nothing bound) otherwise."""
    first = waiting[0]
    dispatch_key = str(first.dispatch_key)
    try:
        found = services.engines(build.engine).find_build(
            dispatch_key, first.commit_sha, repo=first.key.repo, pr=first.key.number
        )
    except EngineError as exc:
        # Not bound: the dispatch's own retry looks its build up again (bot/worker/ci/dispatch.py).
        log.warning(
            "%s build %s: its dispatch could not be looked up: %s", build.engine, build.id, exc
        )
        return False
    if found is None or found.id != build.id:
        log.warning(
            "%s build %s names dispatch %s, which the engine says it did not make; ignored",
            build.engine,
            build.id,
            dispatch_key,
        )
        return False
    store.record_build(
        services.db,
        dispatch_key,
        engine_name=found.engine,
        build_id=found.id,
        build_number=found.number,
        build_url=found.web_url,
    )
    return True


def take_build_news(services: Services, build: BuildRef, finished: bool) -> int:
    """Refresh a bound build's records from the engine, republish their heads; records
    changed. A build no record is bound to changes nothing."""
    records = store.records_for_build(services.db, build.engine, build.id)
    if not records:
        return 0  # not a build prbot made (or one from before a database reset)
    # job.finished and build.finished of one build arrive together; one reads the engine,
    # the other then finds the records finished and reads nothing.
    with named_lock(services.db, f"build:{build.engine}:{build.id}", services.lock_dir):
        records = store.records_for_build(services.db, build.engine, build.id)
        engine = services.engines(build.engine)
        refreshed = refresh_build(services.db, engine, records, build_finished=finished)
        changed = refreshed.changed + _classify(services, build, engine)
    if changed:
        for key in sorted({(r.key.repo, r.key.number, r.key.head_sha) for r in records}):
            republish(services, *key)
    return changed


def _classify(services: Services, build: BuildRef, engine: Engine) -> int:
    """The build's failed jobs classified (and retried once where due); changes."""
    records = store.records_for_build(services.db, build.engine, build.id)
    if not any(r.state in ("failed", "timed_out", "passed") for r in records):
        return 0
    first = records[0]
    loaded = store.load_full_report(
        services.db, first.key.repo, first.key.number, first.key.head_sha
    )
    if loaded is None:
        return 0
    context = dict(loaded[1])
    if services.settings.dry_run:
        # A retry is a write to CI: a dry run classifies, and never retries.
        context["ci_signal"] = {**(context.get("ci_signal") or {}), "retry": False}
    return classify_failures(services.db, engine, records, context)
