"""The repository's own builds of a head, read through each selected smoke job's engine
(``Engine.builds_of_commit``): what they ran or scheduled is reported from them and never
built a second time (bot/jobs/repository_builds.py judges them). prbot's own builds among
them are those its job store recorded, never those whose meta-data names a dispatch (a PR's
code sets meta-data on the build it runs in). Then other apps' check runs and commit
statuses of the head, for the steps no build showed (bot/jobs/repository_checks.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa
from github import GithubException

from bot.engines.base import Engine, EngineError
from bot.github.app import InstallationClient
from bot.jobs.planner import WantedJob
from bot.jobs.repository_builds import SeenStep, build_ids, steps_in_builds
from bot.jobs.repository_checks import StepName, steps_in_checks
from bot.jobs.selection import GPU_SMOKE
from bot.store import jobs as store

# Builds of one head: a handful in practice; 3 pages of 100 bound a pipeline gone wild.
REPOSITORY_BUILD_PAGES = 3
# Check runs and statuses of one head: vLLM posts one status per job, a few hundred a build.
REPOSITORY_CHECK_PAGES = 5


def observe_repository_builds(
    db: sa.Engine,
    engines: Callable[[str], Engine],
    repo: str,
    head_sha: str,
    wanted: Sequence[WantedJob],
) -> tuple[dict[str, SeenStep], list[str]]:
    """The selected smoke steps as the repository's own builds of the head have them, and
    one line for each reason they could not be read (never an error)."""
    keys_by_engine: dict[str, list[str]] = {}
    for job in wanted:
        if job.kind == GPU_SMOKE and job.step_key:
            keys_by_engine.setdefault(job.engine, []).append(job.step_key)
    seen: dict[str, SeenStep] = {}
    notes: list[str] = []
    for name, keys in keys_by_engine.items():
        try:
            listed = engines(name).builds_of_commit(
                repo, head_sha, max_pages=REPOSITORY_BUILD_PAGES
            )
        except EngineError as exc:
            notes.append(f"the repository's own builds of this head were not read: {exc}")
            continue
        if listed.cut:
            notes.append(
                "this head has more builds than prbot reads; the newest "
                f"{len(listed.builds)} were read"
            )
        own = store.recorded_builds(db, name, build_ids(listed.builds))
        seen.update(steps_in_builds(listed.builds, keys, own_builds=own))
    return seen, notes


def observe_github_checks(
    client: InstallationClient,
    repo: str,
    head_sha: str,
    wanted: Sequence[WantedJob],
    names: Sequence[str],
    *,
    own_app_id: str | int | None,
    bot_login: str | None,
    check_run_apps: Sequence[str] = (),
) -> tuple[dict[str, SeenStep], list[str]]:
    """The selected smoke steps as the check runs of ``check_run_apps`` and the commit
    statuses of the head name them (``names``: the rules' templates); one line
    when GitHub refused or the lists were cut."""
    steps = [
        StepName(w.step_key, w.name, w.parallelism)
        for w in wanted
        if w.kind == GPU_SMOKE and w.step_key
    ]
    if not steps or not names:
        return {}, []
    try:
        found = client.head_checks(repo, head_sha, max_pages=REPOSITORY_CHECK_PAGES)
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        return {}, [
            "other apps' check runs and statuses of this head were not read: GitHub answered "
            f"{exc.status}: {str(message or 'no message')[:200]}"
        ]
    notes = []
    if found.cut:
        notes.append(
            "this head has more check runs or statuses than prbot reads; the newest "
            f"{REPOSITORY_CHECK_PAGES * 100} of each were read"
        )
    app_id = str(own_app_id or "")
    seen = steps_in_checks(
        found.check_runs,
        found.statuses,
        steps,
        [str(n) for n in names],
        own_app_id=int(app_id) if app_id.isdigit() else None,
        own_slug=(bot_login or "").removesuffix("[bot]") or None,
        check_run_apps=check_run_apps,
    )
    return seen, notes
